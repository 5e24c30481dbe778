"""``dispatch.random``: ``numpy.random``, drawing with NumPy's own bit generators.

Draws always give NumPy's numbers, so a seeded program gets exactly NumPy's results (legacy
``seed`` / ``rand`` / ``normal``... and ``default_rng``). Results are ``dispatch.ndarray``; under
a forced device target (``using("cupy")``) they are moved there. A large draw of a
``Generator`` on ``PCG64`` (``random``, ``standard_normal``, ``normal``, ``uniform``,
``standard_exponential``, ``exponential``, ``integers``) is made on a CUDA device itself, bit
for bit NumPy's stream, and the generator moves on as NumPy's would (``dispatch.streams``):
under a forced CUDA target, and under automatic routing where the router places it there. There
such a draw is a routed call (the catalog's ``random.Generator.<method>``, priced on the host
and the device by ``dispatch.streams.prices``), and a node of the region the router plans
(``dispatch.routing.live``): a draw whose consumers pay on a device is made there, and stays
there. Small draws stay on the host. The legacy ``RandomState`` (MT19937, whose
stream has no practical parallel form) and other methods draw on the host, exactly.

A draw too large for the host (or under ``using("dask")``, or spanning a connected cluster's
chunks; ``dispatch.cluster.result_reason``) is made chunk by chunk on Dask, still NumPy's
stream (``dispatch.targets._dask_create`` says how, and which distributions). A chained draw
leaves the generator's next state pending, as a Dask value: the next chunked draw continues
from it, and anything else the generator is asked first computes it. NumPy's global
``RandomState`` (``dispatch.random.normal``...) is shared with NumPy itself, so there the next
state is computed at once; so it is for a generator whose NumPy object a library that asks for
NumPy's own types was handed (``_numpys``: scikit-learn's ``check_random_state``).
"""

from __future__ import annotations

import functools
import math
import sys
import time
from typing import Any

import numpy as _np

from dispatch import cluster, targets
from dispatch._namespace import lazy_namespace
from dispatch.arrays import _call, scale_out
from dispatch.arrays._array import ndarray, wrap
from dispatch.base.box import Wrapper
from dispatch.base.devices import HOST_ONLY
from dispatch.base.numpy_catalog import DEVICE_DRAWS
from dispatch.base.ops import op_named
from dispatch.base.state import STATE
from dispatch.routing import floors
from dispatch.targets.numpy_target import NUMPY


class _NumpysToo(type):
    """A class of ``_seeded``'s whose instances are NumPy's class's too: NumPy's own objects (a
    Generator's ``bit_generator``, an unpickled one) are ``np.random.PCG64`` under dispatch."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls.__mro__[1])

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls.__mro__[1])


class _HostStates:
    """The user's own seed sequence (NumPy's ``ISeedSequence``), whose ``generate_state``, written
    under dispatch, gives dispatch arrays, with its states read out as the NumPy arrays NumPy's
    bit generators take; anything else of it is its own."""

    __slots__ = ("seq",)

    def __init__(self, seq: Any) -> None:
        self.seq = seq

    def generate_state(self, n_words: int, dtype: Any = _np.uint32) -> _np.ndarray:
        return _np.asarray(self.seq.generate_state(n_words, dtype))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.seq, name)


class _SpawnableHostStates(_HostStates):
    """``_HostStates`` of a seed sequence that spawns (NumPy's ``ISpawnableSeedSequence``)."""

    __slots__ = ()

    def spawn(self, n_children: int) -> list:
        return self.seq.spawn(n_children)


_np.random.bit_generator.ISeedSequence.register(_HostStates)
_np.random.bit_generator.ISpawnableSeedSequence.register(_SpawnableHostStates)


def _host_states(seed: Any) -> Any:
    """``seed``, or the user's own seed sequence in ``_HostStates``."""
    if isinstance(seed, _np.random.bit_generator.ISeedSequence) and not isinstance(
            seed, (_np.random.SeedSequence, _HostStates)):
        spawns = isinstance(seed, _np.random.bit_generator.ISpawnableSeedSequence)
        return (_SpawnableHostStates if spawns else _HostStates)(seed)
    return seed


def _seeded(numpy_class: type) -> type:
    """NumPy's seed sequence or bit generator, taking its seed as a dispatch array too (NumPy's
    reads an array of ints, or a sequence, which a dispatch array is not to its check), or as a
    seed sequence of the user's whose states are dispatch arrays."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            args = (_host_states(args[0]), *args[1:])
        if "seed" in kwargs:
            kwargs["seed"] = _host_states(kwargs["seed"])
        numpy_class.__init__(self, *_call.host_args(args), **_call.host_kwargs(kwargs))

    return _NumpysToo(numpy_class.__name__, (numpy_class,), {"__init__": __init__, "__module__": __name__,
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
        if STATE.plain and owner._pending is None and _plain(args) and (not kwargs or _plain(kwargs.values())):
            # the common draw (``rng.random(100)``): no array in or out, nothing pending, too
            # small to route or chunk: NumPy's method, its result wrapped, without the checks below
            if _elements(name, method, args, kwargs) < min(ROUTED_DRAW_ELEMENTS, cluster.LIVE_ELEMENTS):
                return wrap(method(*args, **kwargs))
        chunked = _chunked(owner, name, method, args, kwargs)
        if chunked is not None:
            return chunked
        owner._settle()
        drawn = _device_draw(owner, name, method, args, kwargs)
        if drawn is not None:
            return drawn
        if name in _IN_PLACE and args and isinstance(args[0], Wrapper):
            target, rest = args[0], args[1:]
            target._mutate_host(lambda host: method(host, *_call.host_args(rest), **_call.host_kwargs(kwargs)))
            return None
        out = kwargs.get("out")
        if isinstance(out, Wrapper):  # drawn into out's memory (through the host for device data); out comes back
            rest = {k: v for k, v in kwargs.items() if k != "out"}
            out._mutate_host(lambda host: method(*_call.host_args(args), out=host, **_call.host_kwargs(rest)))
            return out
        if STATE.tracing and not _hot(what := _draw_name(owner, name)):  # traced as a routed call is
            return _traced_host_draw(what, method, args, kwargs)
        result = method(*_call.host_args(args), **_call.host_kwargs(kwargs))
        return _call.to_forced_device(wrap(result), _draw_name(owner, name))

    return wrapper


HOST_DRAW_REASON = "host: NumPy's generator, not routed (too small, or a method no device draws)"


def _hot(what: str) -> bool:
    """Whether draws of ``what`` come too often to trace: the router's count, the rule every traced
    call follows (``_call._execute``)."""
    _call.routing()
    return _call.ROUTER.history.count(what)


def _traced_host_draw(what: str, method: Any, args: tuple, kwargs: dict) -> Any:
    """A draw NumPy's generator makes without the router, recorded in the open trace as a call
    of the program (what it drew, its time), as a routed draw is."""
    tracing = _call._tracing()
    start = time.perf_counter()
    drawn = method(*_call.host_args(args), **_call.host_kwargs(kwargs))
    seconds = time.perf_counter() - start
    result = _call.to_forced_device(wrap(drawn), what)
    dtype = getattr(drawn, "dtype", None)
    tracing.record(tracing.CallRecord(op=what, shapes=[], dtypes=[str(dtype)] if dtype is not None else [],
                                      target="numpy", reason=HOST_DRAW_REASON, seconds=seconds,
                                      site=tracing.call_site() if tracing.SITES else None))
    return result


def _draw_name(owner: _Proxy, name: str) -> str:
    """A draw's name as the catalog and the trace give it: ``random.Generator.normal``."""
    return f"random.{type(owner._numpy).__name__}.{name}"


def _plain(values: Any) -> bool:
    """Whether a draw's arguments hold no array: numbers, names, dtypes, shapes of integers."""
    for v in values:
        kind = type(v)
        if kind in _call._PLAIN or isinstance(v, (type, _np.dtype)):
            continue
        if kind is not tuple:
            return False
        for d in v:  # (a loop: a generator costs more than the draw's shape)
            if type(d) is not int:
                return False
    return True



class _Proxy:
    """Common to ``Generator`` and ``RandomState``: NumPy's object inside, methods wrapped.

    A method's wrapper is made once and kept in the instance's ``__dict__``, where the next
    ``rng.random`` finds it without ``__getattr__`` (making one cost more than a small draw);
    a new NumPy object inside (``__setstate__``) drops them. ``_shared``: a library holds the
    NumPy object inside too (``_numpys``), so no draw leaves its next state pending."""

    __slots__ = ("__dict__", "_numpy", "_pending", "_shared")

    def __getattr__(self, name: str) -> Any:
        if name in ("_pending", "_shared"):  # unpickled or made without __init__
            return None if name == "_pending" else False
        value = getattr(self._numpy, name)
        if callable(value) and not name.startswith("_"):
            wrapper = self.__dict__[name] = _host_method(value, name, self)
            return wrapper
        self._settle()
        return value

    def _settle(self) -> None:
        """Compute the state a chunked draw left pending, and move NumPy's generator there."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            _set_state(self._numpy, _compute_state(pending))

    def __reduce__(self) -> tuple:
        """NumPy's pickle of the object inside (its constructor's arguments, its state), loaded
        by a constructor of dispatch's that puts the NumPy object it makes inside this class."""
        self._settle()
        _, args, state = self._numpy.__reduce__()
        return _REBUILDS[type(self)], args, state

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, (_np.random.Generator, _np.random.RandomState)):  # an older pickle: the object inside
            self.__dict__.clear()  # the wrappers of the NumPy object replaced
            self._numpy = state
            self._pending = None
            self._shared = False
        else:
            self._numpy.__setstate__(state)

    def __repr__(self) -> str:
        return repr(self._numpy)


class Generator(_Proxy):
    """``numpy.random.Generator`` whose draws are ``dispatch.ndarray``."""

    __slots__ = ()

    def __init__(self, bit_generator: Any) -> None:
        self._numpy = bit_generator if isinstance(bit_generator, _np.random.Generator) else \
            _np.random.Generator(bit_generator)
        self._pending = None
        self._shared = False

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
        self._shared = False


def _generator_ctor(*args: Any, **kwargs: Any) -> Generator:
    """A pickled ``Generator`` of dispatch's, loaded: NumPy's constructor's, inside ours."""
    return Generator(getattr(_np.random._pickle, "__generator_ctor")(*args, **kwargs))


def _randomstate_ctor(*args: Any, **kwargs: Any) -> RandomState:
    """A pickled ``RandomState`` of dispatch's, loaded: NumPy's constructor's, inside ours."""
    return RandomState(getattr(_np.random._pickle, "__randomstate_ctor")(*args, **kwargs))


_REBUILDS = {Generator: _generator_ctor, RandomState: _randomstate_ctor}


def _numpys_class(obj: Any) -> type | None:
    """NumPy's class of the object ``obj`` stands for, if it is a ``Generator`` or ``RandomState``
    of dispatch's; ``None`` for anything else."""
    return type(obj._numpy) if isinstance(obj, _Proxy) else None


def _numpys(obj: Any) -> Any:
    """``obj`` as a library that asks for NumPy's own types takes it: the NumPy ``Generator`` or
    ``RandomState`` inside one of dispatch's (the same stream: the library's draws and the
    holder's continue each other, as NumPy's one object's would), ``numpy.random`` for this
    module (whose draws are NumPy's global RandomState's); anything else as it is."""
    if isinstance(obj, _Proxy):
        obj._settle()
        obj._shared = True  # the library draws from the NumPy object directly: no next state left pending
        return obj._numpy
    if obj is sys.modules[__name__]:
        return _np.random
    return obj


def default_rng(seed: Any = None) -> Generator:
    """``numpy.random.default_rng``: the same stream for the same seed."""
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, _Proxy):
        seed._settle()
        return Generator(_np.random.default_rng(seed._numpy))
    # a dispatch array of ints (``default_rng(np.arange(3))``) as NumPy's: its check reads no other
    return Generator(_np.random.default_rng(_call.host_args((_host_states(seed),))[0]))


# ---- draws on a CUDA device ------------------------------------------------------------------

# Under a forced CUDA target, smaller draws stay on the host: NumPy and a copy cost less there
# than the kernels' launches.
DEVICE_DRAW_ELEMENTS = 1 << 17
# Under automatic routing, smaller draws stay on the host without asking the router: the
# kernels' launches and the host's share (``dispatch.streams.prices``: 0.3 ms and more) cost
# more than NumPy's draw of so few (under 0.2 ms for every method drawn there).
ROUTED_DRAW_ELEMENTS = 1 << 15


def _device_draw(owner: _Proxy, name: str, method: Any, args: tuple, kwargs: dict) -> Any:
    """NumPy's own stream drawn on a CUDA device (``dispatch.streams``), under a forced target
    or where the router places the draw; ``None`` where the draw stays on the host."""
    if not isinstance(owner, Generator) or name not in _DEVICE_METHODS:
        return None
    forced = STATE.forced_name()
    if forced is None or forced == "auto":
        return _routed_draw(owner, name, method, args, kwargs)
    target = targets.probe(forced)  # (one unavailable: drawn on the host, its fallback recorded there)
    if target is None or target.device.kind != "cuda" or type(owner._numpy.bit_generator) not in _PCG64:
        return None
    from dispatch.streams import calls  # lazy: NumPy's stream tables are built only for a device draw

    if _elements(name, method, args, kwargs) < DEVICE_DRAW_ELEMENTS:
        return None
    plan = calls.plan(name, args, kwargs)
    kernels = _cuda_kernels() if plan is not None else None
    if kernels is None:
        return None
    return _drawn_on(target, owner, plan, kernels)


def _drawn_on(target: Any, owner: Generator, plan: Any, kernels: Any) -> ndarray:
    from dispatch.streams import device  # lazy: as ``calls`` above

    # Drawn on CuPy's current device: torch-cuda adopts that memory as it is, without a copy.
    return wrap(device.draw(owner._numpy, plan, kernels)).to(target.name)


# The methods a CUDA device draws bit for bit (``dispatch.streams.calls.METHODS``), each a
# routed op of the catalog (``random.Generator.<method>``).
_DEVICE_METHODS = frozenset(name.rpartition(".")[2] for name in DEVICE_DRAWS)


def _routed_draw(owner: Generator, name: str, method: Any, args: tuple, kwargs: dict) -> Any:
    """A draw the router places as any call (``random.Generator.<name>``, priced by
    ``dispatch.streams.prices``): on a CUDA device it is drawn there, NumPy's stream bit for
    bit, and stays there for what is computed from it; on the host, NumPy draws it. Either way
    it is a call of the region the router records and plans (``dispatch.routing.live``), so
    that a draw whose consumers run on a device is made there. ``None``: too small to route, or not a
    ``PCG64`` stream: NumPy's method draws it as before."""
    n = _elements(name, method, args, kwargs)
    if n < ROUTED_DRAW_ELEMENTS or type(owner._numpy.bit_generator) not in _PCG64 or "out" in kwargs:
        return None
    dtype = _drawn_dtype(name, args, kwargs)
    if dtype is None:
        return None
    op = op_named(f"random.Generator.{name}")
    if not STATE.tracing and floors.under_seed_floor(op, n):
        return None  # NumPy's by the seed's table: the routing machinery need not load for it
    router = _call.routing()  # a draw the router places: the routing machinery loads, if it has not yet
    from dispatch.routing.decisions import Decision, DecisionKind

    inputs = _call.Inputs([])
    inputs.size, inputs.dtypes, inputs.devices = n, (dtype,), HOST_ONLY  # a fresh array of n outputs
    decision = router.decide(op, inputs)
    target = decision.target
    if not target.device.is_host:
        plan, kernels = None, None
        if target.device.kind == "cuda":
            from dispatch.streams import calls  # lazy: as in ``_device_draw``

            plan = calls.plan(name, args, kwargs)
            kernels = _cuda_kernels() if plan is not None else None
        if kernels is not None:
            return _noted(op, inputs, decision, _call._execute(
                op, inputs, decision, lambda: _drawn_on(target, owner, plan, kernels)))
        why = "CuPy's CUDA kernels are unavailable" if plan is not None else "not drawn there with these arguments"
        if plan is not None:
            router.refused(op, inputs, target, f"{target.name} refused: {why}")
        decision = Decision(NUMPY, DecisionKind.FALLBACK, f"{router.FALLBACK}{target.name}: {why}", key=decision.key)
    return _noted(op, inputs, decision, _call._execute(
        op, inputs, decision, lambda: wrap(method(*_call.host_args(args), **_call.host_kwargs(kwargs)))))


def _noted(op: Any, inputs: Any, decision: Any, drawn: Any) -> Any:
    """``drawn``, noted in the region being recorded as the call path notes a routed call."""
    live = _call._LIVE
    if live.recording:
        live.note(op, inputs, decision, drawn)
    return drawn


def _drawn_dtype(name: str, args: tuple, kwargs: dict) -> Any:
    """The dtype a draw gives (its ``dtype`` argument, or NumPy's default), or ``None`` where it
    cannot be told cheaply (NumPy's method then answers, errors included)."""
    if name == "integers":
        dtype = kwargs.get("dtype", args[3] if len(args) > 3 else _np.int64)
    elif name in ("random", "standard_normal", "standard_exponential"):
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 else _np.float64)
    else:
        dtype = _np.float64
    try:
        return _np.dtype(dtype)
    except TypeError:
        return None


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
    from dispatch.targets import _dask_create as chunked  # (Dask's draws: loaded where one is made)

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
    elif owner is None or owner._shared:  # a stream NumPy's own callers draw from too: its next state is needed now
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
    if type(size) is tuple and all(type(d) is int for d in size):  # (NumPy's prod of a tuple costs more than a draw)
        return math.prod(size)
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
    if callable(value) and name in _np.random.mtrand.__all__:  # NumPy's global RandomState's: seed, rand, normal...
        from dispatch.targets._dask_create import CHAINED  # (Dask may chunk the draws: loaded for these alone)

        if name in CHAINED["legacy"]:  # once per name: the wrapper is kept
            value = globals()[name] = _global(name, value)
    return value


__all__ = sorted(n for n in _np.random.__all__ if n != "test")
