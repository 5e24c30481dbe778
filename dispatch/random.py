"""``dispatch.random``: ``numpy.random``, drawing with NumPy's own bit generators.

Draws always give NumPy's numbers, so a seeded program gets exactly NumPy's results (legacy
``seed`` / ``rand`` / ``normal``... and ``default_rng``). Results are ``dispatch.ndarray``; under
a forced device target (``using("cupy")``) they are moved there. There, a large draw of a
``Generator`` on ``PCG64`` (``random``, ``standard_normal``, ``normal``, ``uniform``,
``standard_exponential``, ``exponential``, ``integers``) is made on the CUDA device itself, bit
for bit NumPy's stream, and the generator moves on as NumPy's would (``dispatch.streams``).
The legacy ``RandomState`` (MT19937) and other methods draw on the host, exactly.

A draw too large for the host (or under ``using("dask")``, or spanning a connected cluster's
chunks; ``dispatch.cluster.result_reason``) is made chunk by chunk on Dask, still NumPy's
stream (``dispatch.targets._dask_create`` says how, and which distributions). A chained draw
leaves the generator's next state pending, as a Dask value: the next chunked draw continues
from it, and anything else the generator is asked first computes it. NumPy's global
``RandomState`` (``dispatch.random.normal``...) is shared with NumPy itself, so there the next
state is computed at once.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as _np

from dispatch import cluster, targets
from dispatch._namespace import lazy_namespace
from dispatch.arrays import _call, scale_out
from dispatch.arrays._array import ndarray, wrap
from dispatch.base.ops import op_named
from dispatch.base.state import STATE
from dispatch.targets import _dask_create as chunked
from dispatch.targets._dask_create import CHAINED


def _seeded(numpy_class: type) -> type:
    """NumPy's seed sequence or bit generator, taking its seed as a dispatch array too (NumPy's
    reads an array of ints, or a sequence, which a dispatch array is not to its check)."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        numpy_class.__init__(self, *_call.host_args(args), **_call.host_kwargs(kwargs))

    return type(numpy_class.__name__, (numpy_class,), {"__init__": __init__, "__module__": __name__,
                                                       "__doc__": numpy_class.__doc__})


BitGenerator = _np.random.BitGenerator
SeedSequence = _seeded(_np.random.SeedSequence)
MT19937 = _seeded(_np.random.MT19937)
PCG64 = _seeded(_np.random.PCG64)
PCG64DXSM = _seeded(_np.random.PCG64DXSM)
Philox = _seeded(_np.random.Philox)
SFC64 = _seeded(_np.random.SFC64)
_PCG64 = (_np.random.PCG64, PCG64)  # NumPy's, and ours taking array seeds: the same stream

# Methods that shuffle their argument in place.
_IN_PLACE = frozenset({"shuffle"})


def _host_method(method: Any, name: str, owner: _Proxy) -> Any:
    """A NumPy generator method whose array arguments come from the host and whose results
    are dispatch arrays (on the forced device, if one is forced; chunked in Dask if too large)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        chunked = _chunked(owner, name, method, args, kwargs)
        if chunked is not None:
            return chunked
        owner._settle()
        drawn = _device_draw(owner, name, method, args, kwargs)
        if drawn is not None:
            return drawn
        if name in _IN_PLACE and args and isinstance(args[0], ndarray):
            target, rest = args[0], args[1:]
            target._mutate_host(lambda host: method(host, *_call.host_args(rest), **_call.host_kwargs(kwargs)))
            return None
        out = kwargs.get("out")
        if isinstance(out, ndarray):  # drawn into out's memory (through the host for device data); out comes back
            rest = {k: v for k, v in kwargs.items() if k != "out"}
            out._mutate_host(lambda host: method(*_call.host_args(args), out=host, **_call.host_kwargs(rest)))
            return out
        result = method(*_call.host_args(args), **_call.host_kwargs(kwargs))
        return _call.to_forced_device(wrap(result))

    return wrapper


class _Proxy:
    """Common to ``Generator`` and ``RandomState``: NumPy's object inside, methods wrapped."""

    __slots__ = ("_numpy", "_pending")

    def __getattr__(self, name: str) -> Any:
        if name == "_pending":  # unpickled or made without __init__
            return None
        value = getattr(self._numpy, name)
        if callable(value) and not name.startswith("_"):
            return _host_method(value, name, self)
        self._settle()
        return value

    def _settle(self) -> None:
        """Compute the state a chunked draw left pending, and move NumPy's generator there."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            _set_state(self._numpy, _compute_state(pending))

    def __getstate__(self) -> Any:
        self._settle()
        return self._numpy

    def __setstate__(self, state: Any) -> None:
        self._numpy = state
        self._pending = None

    def __repr__(self) -> str:
        return repr(self._numpy)


class Generator(_Proxy):
    """``numpy.random.Generator`` whose draws are ``dispatch.ndarray``."""

    __slots__ = ()

    def __init__(self, bit_generator: Any) -> None:
        self._numpy = bit_generator if isinstance(bit_generator, _np.random.Generator) else \
            _np.random.Generator(bit_generator)
        self._pending = None

    @property
    def bit_generator(self) -> Any:
        self._settle()
        return self._numpy.bit_generator

    def spawn(self, n_children: int) -> list[Generator]:
        return [Generator(g) for g in self._numpy.spawn(n_children)]


class RandomState(_Proxy):
    """``numpy.random.RandomState`` whose draws are ``dispatch.ndarray``."""

    __slots__ = ()

    def __init__(self, seed: Any = None) -> None:
        self._numpy = seed if isinstance(seed, _np.random.RandomState) else _np.random.RandomState(seed)
        self._pending = None


def default_rng(seed: Any = None) -> Generator:
    """``numpy.random.default_rng``: the same stream for the same seed."""
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, _Proxy):
        seed._settle()
    return Generator(_np.random.default_rng(seed._numpy if isinstance(seed, _Proxy) else seed))


# ---- draws on a CUDA device ------------------------------------------------------------------

# Smaller draws stay on the host: NumPy and a copy cost less there than the kernels' launches.
DEVICE_DRAW_ELEMENTS = 1 << 17


def _device_draw(owner: _Proxy, name: str, method: Any, args: tuple, kwargs: dict) -> Any:
    """NumPy's own stream drawn on the forced CUDA device (``dispatch.streams``), or ``None``
    where the draw stays on the host."""
    if STATE.plain or not isinstance(owner, Generator):
        return None
    target = targets.forced()
    if target is None or target.device.kind != "cuda" or type(owner._numpy.bit_generator) not in _PCG64:
        return None
    from dispatch.streams import calls  # lazy: NumPy's stream tables are built only for a device draw

    if name not in calls.METHODS or _elements(name, method, args, kwargs) < DEVICE_DRAW_ELEMENTS:
        return None
    plan = calls.plan(name, args, kwargs)
    kernels = _cuda_kernels() if plan is not None else None
    if kernels is None:
        return None
    from dispatch.streams import device  # lazy: as ``calls`` above

    # Drawn on CuPy's current device: torch-cuda adopts that memory as it is, without a copy.
    return wrap(device.draw(owner._numpy, plan, kernels)).to(target.name)


@functools.cache
def _cuda_kernels() -> Any:
    """The CUDA kernels, or ``None`` where CuPy or a CUDA device is missing."""
    try:
        from dispatch.streams.kernels import cupy_kernels  # lazy: the CUDA sources are read only to draw there

        return cupy_kernels()
    except Exception:
        return None


# ---- chunked draws on Dask ----------------------------------------------------------------------------


def _chunked(owner: Any, name: str, method: Any, args: tuple, kwargs: dict) -> Any:
    """The draw as a chunked Dask array, or ``None`` where it stays on the host. ``owner`` is a
    proxy (whose next state may stay pending) or ``None`` for NumPy's global RandomState."""
    n = _elements(name, method, args, kwargs)
    if n < cluster.LIVE_ELEMENTS and STATE.plain:
        return None  # the common case, decided without looking further
    reason = cluster.result_reason(8 * n, n)
    if reason is None or cluster._dask_target() is None:
        return None
    numpy_gen = method.__self__
    kind = "legacy" if isinstance(numpy_gen, _np.random.RandomState) else "generator"

    if name not in chunked.CHAINED[kind]:
        return None
    plan = chunked.random_plan(kind, _ALIASES.get(name, name), method, args, kwargs)  # ranf: random_sample
    if plan is None:
        return None
    legacy = kind == "legacy"
    pending = owner._pending if owner is not None else None
    state = pending if pending is not None else _get_state(numpy_gen)
    array, after = chunked.chunked_draw(state, legacy, plan)
    if isinstance(after, dict):
        _set_state(numpy_gen, after)
        after = None
    elif owner is None:  # NumPy's own global stream: its next state is needed now
        _set_state(numpy_gen, _compute_state(after))
        after = None
    if owner is not None:
        owner._pending = after
    op = _op(name)
    result = scale_out.run_on_dask(op, reason, lambda: wrap(array)) if op is not None else wrap(array)
    return result


def _op(name: str) -> Any:
    try:
        return op_named(f"random.{name}")
    except (KeyError, AttributeError):
        return None


_SIZE_AT: dict[tuple[type, str], int] = {}  # (generator type, method) -> position of `size`


def _elements(name: str, method: Any, args: tuple, kwargs: dict) -> int:
    """The draw's element count from its ``size`` (``rand`` / ``randn``: their arguments), cheaply;
    -1 when there is none."""
    if name in ("rand", "randn"):
        size: Any = args
    elif "size" in kwargs:
        size = kwargs["size"]
    else:
        key = (type(method.__self__), name)
        at = _SIZE_AT.get(key)
        if at is None:
            import inspect

            try:
                names = list(inspect.signature(method).parameters)
            except (TypeError, ValueError):
                names = []
            at = _SIZE_AT[key] = names.index("size") if "size" in names else -1
        size = args[at] if 0 <= at < len(args) else None
    if type(size) is int:
        return size
    if size is None:
        return -1
    try:
        return int(size) if _np.ndim(size) == 0 else int(_np.prod(size, dtype=_np.int64))
    except (TypeError, ValueError):
        return -1


def _get_state(numpy_gen: Any) -> dict:
    if isinstance(numpy_gen, _np.random.RandomState):
        return numpy_gen.get_state(legacy=False)
    return numpy_gen.bit_generator.state


def _set_state(numpy_gen: Any, state: dict) -> None:
    if isinstance(numpy_gen, _np.random.RandomState):
        numpy_gen.set_state(state)
    else:
        numpy_gen.bit_generator.state = state


def _compute_state(pending: Any) -> dict:
    import dask

    (state,) = dask.compute(pending, **cluster.scheduler())
    return state


_ALIASES = {"ranf": "random_sample", "sample": "random_sample"}  # module-level names only


def _global(name: str, routed: Any) -> Any:
    """A module-level draw (NumPy's global RandomState): chunked in Dask when too large."""

    @functools.wraps(routed)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        method = getattr(_np.random.mtrand._rand, _ALIASES.get(name, name))
        chunked = _chunked(None, name, method, args, kwargs)
        return chunked if chunked is not None else routed(*args, **kwargs)

    return wrapper


# Module-level functions (seed, rand, normal...) draw from NumPy's global RandomState, shared
# with NumPy itself, through the call path (so they show in traces).
_namespace_getattr, __dir__ = lazy_namespace(globals(), _np.random, "random.")


def __getattr__(name: str) -> Any:
    value = _namespace_getattr(name)

    if name in CHAINED["legacy"] and callable(value):  # once per name: the wrapper is kept
        value = globals()[name] = _global(name, value)
    return value


__all__ = sorted(n for n in _np.random.__all__ if n != "test")
