"""The targets dispatch knows, and the ones that work here.

A target is registered with ``register(TargetSpec(...))``: the name, the library, the device,
the dtypes it holds and its table of counterpart functions, and how to make it. dispatch's own
targets are declared (``declare``: name, library, device, rank) when ``dispatch.targets`` is
imported, and their adapter modules (``torch_target``, ``cupy_target``...) imported only when
the target is first probed: each completes its registration then (``complete``), so a script
that runs on NumPy loads none of them. Every list of targets the rest of dispatch uses (the GPU
targets, the host targets, those the cost policy prices, an array's engine) is read from here.

Targets are made lazily, on first use: a missing or broken library makes its targets
unavailable, with the reason kept for ``dispatch info``; it never breaks a call.
"""

from __future__ import annotations

import importlib
import weakref
from _thread import RLock  # threading's, without loading threading: a script's start
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from dispatch.base import devices
from dispatch.base.devices import device_of, library_of
from dispatch.base.records import Frozen
from dispatch.targets.protocol import Target, Unavailable

__all__ = [
    "TargetSpec",
    "available",
    "complete",
    "declare",
    "disable",
    "engine_of",
    "forced_but_unavailable",
    "get",
    "gpu_libraries",
    "gpu_names",
    "host_array",
    "host_names",
    "is_up",
    "names",
    "names_on",
    "on_up",
    "priced_names",
    "probe",
    "register",
    "reset",
    "spec",
    "specs",
    "tried",
    "unavailable",
    "unregister",
    "up",
]

# A target's device kind, from the Device kind it computes on.
HOST_KIND, GPU_KIND, CLUSTER_KIND = "host", "gpu", "cluster"


class TargetSpec(Frozen):
    """One target's registration.

    Parameters
    ----------
    name : str
        What ``using()``, ``set_backend()`` and ``DISPATCH_BACKEND`` call it.
    library : str
        The module a user imports for its arrays: ``"numpy"``, ``"torch"``, ``"cupy"``, ``"dask"``.
    device : str
        The kind of ``Device`` it computes on: ``"cpu"``, ``"cuda"``, ``"mps"`` or ``"dask"``.
    make : callable
        Makes the target (a ``Target``); raises ``Unavailable`` where its library or device is
        missing. Called once, on first use.
    rank : int
        Its place in listings; among the engines of one device the lower is tried first, and a
        device's first engine is its home.
    dtypes : frozenset of numpy.dtype, optional
        The NumPy dtypes it holds (``None``: every one); it refuses calls on others.
    counterparts : mapping
        NumPy op name -> its own implementation, for the ops it spells otherwise than its
        library's function of the same name (torch's table; CuPy's fixes; Dask's aliases).
    array_module : str
        The module prefix of its array type (``"torch"``, ``"dask.array"``), by which an array
        is told to be its library's; ``""`` for NumPy's own.
    fork_safe : bool
        Whether a process forked after its library loaded may keep using it (``base.forksafe``).
    """

    __slots__ = ("name", "library", "device", "make", "rank", "dtypes", "counterparts", "array_module", "fork_safe")  # noqa: RUF023 - the fields, in order

    def __init__(self, name: str, library: str, device: str, make: Callable[[], Target], rank: int = 100,
                 dtypes: frozenset[np.dtype] | None = None, counterparts: Mapping[str, Any] | None = None,
                 array_module: str = "", fork_safe: bool = True) -> None:
        self._set(name, library, device, make, rank, dtypes, {} if counterparts is None else counterparts,
                  array_module, fork_safe)

    @property
    def device_kind(self) -> str:
        """``"host"``, ``"gpu"`` or ``"cluster"``."""
        return HOST_KIND if self.device == "cpu" else CLUSTER_KIND if self.device == "dask" else GPU_KIND


class Names(list):
    """A live, read-only list of the registered targets' names (or libraries) that pass a test,
    in rank order: it follows ``register`` and ``unregister``. A list underneath, so that ``in``
    and iteration cost what a list's do on the call path."""

    def __init__(self, test: Callable[[TargetSpec], bool], what: Callable[[TargetSpec], str] = lambda s: s.name):
        super().__init__()
        self._test, self._what = test, what

    def _refresh(self, ranked: list[TargetSpec]) -> None:
        list.__setitem__(self, slice(None), dict.fromkeys(self._what(s) for s in ranked if self._test(s)))

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a view of the target registry: register or unregister a target instead")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only


_specs: dict[str, TargetSpec] = {}
_NAMES = Names(lambda s: True)
_HOST = Names(lambda s: s.device_kind == HOST_KIND)
_GPU = Names(lambda s: s.device_kind == GPU_KIND)
_PRICED = Names(lambda s: s.device_kind != CLUSTER_KIND)  # a calibration measures them; Dask is reached by size
_GPU_LIBRARIES = Names(lambda s: s.device_kind == GPU_KIND, lambda s: s.library)
_VIEWS = (_NAMES, _HOST, _GPU, _PRICED, _GPU_LIBRARIES)
_owners: dict[tuple[str, str], str] = {}  # (library, device kind) -> the first such target: an array's engine


_modules: dict[str, str] = {}  # a declared target -> the module that completes it, until imported


def register(target: TargetSpec) -> TargetSpec:
    """Add a target; ``ValueError`` if its name is taken. Returns ``target`` (for ``unregister``)."""
    if not isinstance(target, TargetSpec):
        raise TypeError(f"register takes a TargetSpec, not {type(target).__name__}")
    with _lock:
        if target.name in _specs or target.name == "auto":
            raise ValueError(f"a target called {target.name!r} is registered already")
        _specs[target.name] = target
        if target.array_module:
            devices.add_library(target.array_module, target.library)
        _refresh()
    return target


def declare(name: str, module: str, library: str, device: str, rank: int = 100, array_module: str = "",
            fork_safe: bool = True) -> TargetSpec:
    """Register a target whose adapter is ``module``, imported when the target is first probed:
    it calls ``complete`` then. The rest of dispatch lists and ranks the target meanwhile."""
    target = register(TargetSpec(name, library, device, _incomplete, rank, array_module=array_module,
                                 fork_safe=fork_safe))
    _modules[name] = module
    return target


def complete(name: str, make: Callable[[], Target], dtypes: frozenset[np.dtype] | None = None,
             counterparts: Mapping[str, Any] | None = None) -> TargetSpec:
    """What a declared target's module gives as it is imported: how to make the target, the
    dtypes it holds and its counterparts (as for ``TargetSpec``)."""
    with _lock:
        s = _specs[name]
        _specs[name] = TargetSpec(s.name, s.library, s.device, make, s.rank, dtypes, counterparts, s.array_module,
                                  s.fork_safe)
        _modules.pop(name, None)
        return _specs[name]


def _incomplete() -> Target:
    raise Unavailable("its module did not complete its registration")


def unregister(name: str) -> None:
    """Remove the target ``name`` and what was learnt of it here; ``KeyError`` if there is none."""
    with _lock:
        del _specs[name]
        _modules.pop(name, None)
        _targets.pop(name, None)
        _unavailable.pop(name, None)
        _refresh()


def _refresh() -> None:
    ranked = sorted(_specs.values(), key=lambda s: s.rank)  # stable: registration order breaks ties
    for view in _VIEWS:
        view._refresh(ranked)
    _owners.clear()
    for s in ranked:
        _owners.setdefault((s.library, s.device), s.name)


def spec(name: str) -> TargetSpec:
    """The registration of ``name``; ``ValueError`` naming the known targets if there is none."""
    try:
        return _specs[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; known: {', '.join(_NAMES)}") from None


def specs() -> list[TargetSpec]:
    """Every registration, in rank order."""
    return [_specs[n] for n in _NAMES]


def names() -> Names:
    """Every registered target's name, in rank order (a live view)."""
    return _NAMES


def host_names() -> Names:
    """The targets computing in host memory (``numpy``, ``torch-cpu``), a live view."""
    return _HOST


def gpu_names() -> Names:
    """The targets on a GPU, each device's home first (``cupy``, ``torch-cuda``, ``torch-mps``), a live view."""
    return _GPU


def priced_names() -> Names:
    """The targets the cost policy weighs, those a calibration measures: host and GPU ones (a live view)."""
    return _PRICED


def gpu_libraries() -> Names:
    """The libraries of the GPU targets (``cupy``, ``torch``): the engines that hold device data (a live view)."""
    return _GPU_LIBRARIES


def names_on(device_kind: str) -> list[str]:
    """The targets computing on devices of kind ``device_kind`` (``"cuda"``, ``"mps"``), home first."""
    return [n for n in _NAMES if _specs[n].device == device_kind]


# ---- the targets that work here -------------------------------------------------------------------

_lock = RLock()
_targets: dict[str, Target] = {}
_unavailable: dict[str, str] = {}
_listeners: list[Callable[[], Callable[[str], None] | None]] = []  # weak: told when a target comes up


def on_up(listener: Callable[[str], None]) -> None:
    """Call ``listener(name)`` each time a target comes up (a bound method is held weakly): the
    router's decisions priced while it was down are stale then."""
    ref = weakref.WeakMethod(listener) if hasattr(listener, "__self__") else (lambda: listener)
    _listeners.append(ref)


def probe(name: str) -> Target | None:
    """The target called ``name`` if it works on this machine, else ``None`` (reason kept)."""
    if name in _targets:
        return _targets[name]
    if name in _unavailable:
        return None
    spec(name)  # ValueError for an unknown name
    with _lock:
        if name in _targets or name in _unavailable:
            return _targets.get(name)
        try:
            if name in _modules:
                importlib.import_module(_modules[name])  # its adapter, which completes its registration
            target = _specs[name]
            made = target.make()
            made.name, made.spec = target.name, target
            _targets[name] = made
        except Unavailable as exc:
            _unavailable[name] = str(exc)
        except Exception as exc:  # a broken install must not break a call
            _unavailable[name] = f"{type(exc).__name__}: {exc}"
    found = _targets.get(name)
    if found is not None:
        for ref in list(_listeners):
            listener = ref()
            if listener is None:
                _listeners.remove(ref)
            else:
                listener(name)
    return found


def up() -> list[str]:
    """The targets brought up so far (probed and working), without probing any other."""
    return list(_targets)


def is_up(name: str) -> bool:
    """Whether ``name`` was brought up and works (``up()``, without copying the list)."""
    return name in _targets


def tried(name: str) -> bool:
    """Whether ``name`` was probed already (it works, or why not is kept): asking costs nothing."""
    return name in _targets or name in _unavailable


def get(name: str) -> Target:
    """The target called ``name``; ``RuntimeError`` naming the reason if it is unavailable."""
    target = probe(name)
    if target is None:
        raise RuntimeError(f"target {name!r} is not available here: {_unavailable[name]}")
    return target


def available() -> dict[str, Target]:
    """Every target that works on this machine, probing those not tried yet."""
    for name in _NAMES:
        probe(name)
    return {name: _targets[name] for name in _NAMES if name in _targets}


def unavailable() -> dict[str, str]:
    """Why each target that does not work here does not."""
    available()
    return dict(_unavailable)


def forced_but_unavailable(name: str) -> str:
    """Why a call forced onto ``name``, probed and found not to work here, runs on NumPy (the
    router's and the trace's words), without probing the other targets."""
    return f"forced {name}, which is unavailable: {_unavailable.get(name)}"


def disable(name: str, reason: str) -> None:
    """Make the target ``name`` unavailable here, for ``reason`` (``reset`` probes it again)."""
    _targets.pop(name, None)
    _unavailable[name] = reason


def reset(name: str | None = None) -> None:
    """Forget probe results (all, or one target's) so the next use probes again."""
    with _lock:
        for table in (_targets, _unavailable):
            if name is None:
                table.clear()
            else:
                table.pop(name, None)


def engine_of(native: Any) -> Target:
    """The target owning a native array: its library's first target on its device kind
    (NumPy's for a ``numpy.ndarray``)."""
    library = library_of(type(native)) or "numpy"
    place = "cpu" if library == "numpy" else device_of(native).kind
    name = _owners.get((library, place))
    if name is None:
        raise RuntimeError(f"no registered target holds {library} arrays on {place}")
    return get(name)


def host_array(native: Any) -> Any:
    """A native array's data as a ``numpy.ndarray`` on the host."""
    return engine_of(native).to_host(native)
