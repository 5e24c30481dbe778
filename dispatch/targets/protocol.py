"""What every target implements: the ``Target`` protocol, and the refusals it raises.

A target is an engine on a device. It converts arrays between the host and its own type, runs
ops on its own arrays exactly as NumPy would, and refuses (``Unsupported``) what it cannot, so
the call goes elsewhere. ``dispatch.targets.registry`` says which targets exist; each adapter
module (``numpy_target``, ``torch_target``...) implements this protocol and completes its target's
registration when it is imported, at the target's first probe.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any

import numpy as np

from dispatch.base.devices import HOST, Device
from dispatch.base.ops import Op
from dispatch.base.tiers import Backend

__all__ = ["FINITE_INPUTS", "Target", "Unavailable", "Unsupported", "check_finite", "dtypes_of_kinds"]


class Unsupported(Exception):
    """A target cannot run this call exactly as NumPy would; the reason says why.

    ``lasting`` marks a refusal that holds for every call of the same kind (the op, the input
    dtypes, the devices: an op the target lacks, an input dtype it cannot hold); the router
    then sends that kind to NumPy straight away. Other refusals depend on this call's
    arguments (an axis out of range, ``where=``, a value NumPy rejects) and are asked again.
    """

    def __init__(self, reason: str, *, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


class Unavailable(Exception):
    """A target's library or device is missing or broken (raised by its constructor)."""


# Linear algebra that NumPy's LAPACK answers with NaNs, or with a LinAlgError, when an input
# holds a NaN or an infinity, where cuSOLVER and torch pivot around it and return finite
# numbers. A device checks these inputs first (one reduction read on the host: little next to a
# factorisation) and leaves non-finite ones to NumPy.
FINITE_INPUTS = frozenset({
    "linalg.inv", "linalg.tensorinv", "linalg.solve", "linalg.tensorsolve", "linalg.det", "linalg.slogdet",
    "linalg.matrix_power", "linalg.svd", "linalg.svdvals", "linalg.matrix_rank", "linalg.cond", "linalg.pinv",
    "linalg.lstsq", "linalg.eig", "linalg.eigvals", "linalg.eigh", "linalg.eigvalsh", "linalg.cholesky",
    "linalg.qr", "polyfit",
})


def check_finite(arrays: Any, all_finite: Any) -> None:
    """Refuse the call (NumPy decides) if ``all_finite(a)`` is false for a float or complex array."""
    for a in arrays:
        if str(a.dtype).startswith(("float", "complex", "torch.float", "torch.complex", "torch.bfloat")) \
                and not all_finite(a):
            raise Unsupported("a NaN or an infinity in a linear algebra input: NumPy's LAPACK decides "
                              "(NaN results, or LinAlgError)")


def dtypes_of_kinds(kinds: str) -> frozenset[np.dtype]:
    """NumPy's built-in dtypes of the given kinds (``"biufc"``: the numbers and booleans)."""
    return frozenset(np.dtype(c) for c in np.typecodes["All"] if np.dtype(c).kind in kinds)


class Target(abc.ABC):
    """An engine on a device: the protocol the call path, the router and ``ndarray`` use.

    A native array is the engine's own array type (``numpy.ndarray``, ``torch.Tensor``,
    ``cupy.ndarray``, ``dask.array.Array``). Subclasses implement the abstract methods; the
    others have defaults that suit a host engine. The registry (``dispatch.targets.registry``)
    sets ``name`` and ``spec`` on the instance it makes, from the target's registration.

    Attributes
    ----------
    name : str
        The target's name (``"numpy"``, ``"torch-cuda"``...), as ``using()`` takes it.
    library : str
        The module a user would import for its arrays (``"numpy"``, ``"torch"``, ``"cupy"``).
    device : Device
        Where its arrays live (``HOST``, ``Device("cuda", 0)``...).
    tier : Backend
        The seed's class of hardware it stands for (``SCALAR``, ``SIMD``, ``GPU``).
    """

    name: str = ""
    library: str = ""
    device: Device = HOST
    tier: Backend = Backend.SCALAR
    spec: Any = None  # its registration (``registry.TargetSpec``), set by the registry

    # ---- running ---------------------------------------------------------------------------------

    @abc.abstractmethod
    def run(self, op: Op, args: tuple, kwargs: dict) -> Any:
        """Run ``op`` on native arguments as NumPy would; raise ``Unsupported`` to refuse."""

    def runner(self, op: Op, args: tuple, kwargs: dict) -> Any:
        """``run`` for calls like this one (the same op, dtypes, shapes, scalar types and
        keywords), as ``run_like(args, kwargs)``: what a target resolves per call signature, it
        may resolve here once (see the lane's memo in ``dispatch.arrays._call``)."""
        return lambda natives, kw: self.run(op, natives, kw)

    def supports(self, op: Op) -> bool:
        """A cheap, static answer: may this target run ``op`` at all (dtypes are checked later)?"""
        return True

    def events(self) -> tuple[Any, Any] | None:
        """A pair of device timing events (start, end), or ``None`` on the host."""
        return None

    def synchronize(self) -> None:  # noqa: B027 - a no-op on the host, as documented
        """Wait for queued work (a no-op on the host)."""

    # ---- conversions -----------------------------------------------------------------------------

    @abc.abstractmethod
    def from_host(self, array: np.ndarray) -> Any:
        """A host NumPy array as this target's native array (a copy unless zero-copy is possible)."""

    @abc.abstractmethod
    def to_host(self, native: Any) -> np.ndarray:
        """This target's native array as a host NumPy array."""

    @abc.abstractmethod
    def adopt(self, native: Any) -> Any:
        """A native array of another engine on the same device, as this target's (zero-copy)."""

    @abc.abstractmethod
    def owns(self, native: Any) -> bool:
        """Whether ``native`` is this target's own array type (on its device kind)."""

    # ---- the array's own operations (``ndarray`` calls them on the engine holding its data) ------

    @abc.abstractmethod
    def dtype_of(self, native: Any) -> np.dtype:
        """The NumPy dtype of a native array; ``Unsupported`` if it has none."""

    @abc.abstractmethod
    def assign(self, dst: Any, src: Any) -> None:
        """Write ``src`` (any engine's array, or host data) into the native array ``dst``, in
        place, cast to ``dst``'s dtype as ``numpy.copyto(casting="unsafe")`` does."""

    @abc.abstractmethod
    def view(self, native: Any, dtype: np.dtype | None) -> Any:
        """``a.view()`` (``dtype`` ``None``) or ``a.view(dtype)``: the same memory, no copy."""

    def text(self, native: Any, how: Any) -> str:
        """``how`` (``repr`` or ``str``) of the array as NumPy prints it."""
        return how(self.to_host(native))

    def item(self, native: Any, args: tuple) -> Any:
        """``a.item(*args)``: one element as a Python scalar."""
        return self.to_host(native).item(*args)

    # ---- what its registration declares ----------------------------------------------------------

    @property
    def dtypes(self) -> frozenset[np.dtype] | None:
        """The NumPy dtypes it holds (``None``: every one), as registered."""
        return None if self.spec is None else self.spec.dtypes

    @property
    def counterparts(self) -> Mapping[str, Any]:
        """Its own implementation of each NumPy op it spells otherwise, as registered."""
        return {} if self.spec is None else self.spec.counterparts

    def __repr__(self) -> str:
        return f"<target {self.name} on {self.device}>"
