"""Arrays made chunk by chunk on Dask: creation functions and random draws, so an array larger
than any one machine never exists whole anywhere.

Creation: ``zeros``, ``ones``, ``empty``, ``full``, ``eye``, ``identity`` are Dask's own;
``arange`` and ``linspace`` are built here, because Dask's compute each chunk from its own
start and differ from NumPy in the last bits (``_dask_blocks`` computes NumPy's formula).

Random draws equal NumPy's stream. NumPy's generators are sequential: a draw of ``n`` values
leaves the bit generator where the next draw starts. Two ways to place chunk ``i``:

- **chain** (every distribution in ``CHAINED``): chunk ``i`` is drawn from the state chunk
  ``i - 1`` left, one task per chunk returning ``(chunk, next state)``. Chunks are blocks of
  consecutive elements in C order (one chunk across the trailing axes, or single rows), so
  together they are exactly NumPy's one draw. Drawing is sequential (one worker at a time,
  as NumPy's stream is); what follows runs in parallel. Computing a late chunk draws the
  earlier ones again (it needs their states): persist a chained array you read repeatedly.
- **jump** (``random`` and ``uniform`` in float64, on PCG64 / PCG64DXSM): each value takes
  exactly one 64-bit draw, so chunk ``i`` starts at ``advance(state, offset_i)``: chunks are
  independent, drawn in parallel, and the generator's next state is known at once.

Where chained draws do not equal one draw, chunking is refused and the draw stays on the host:
``integers`` / ``randint`` with 8- or 16-bit (and bool) dtypes (NumPy buffers one 32-bit draw
across several values within a call, and drops the rest at the call's end), distributions
with vector outcomes (``multinomial``, ``dirichlet``, ``multivariate_normal``), shuffles and
``choice``, and any draw whose parameters are arrays rather than scalars.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import pickle
from typing import Any

import numpy as np

from dispatch import cluster
from dispatch.targets import _dask_blocks as blocks
from dispatch.targets.protocol import Unsupported

__all__ = ["CHAINED", "CREATORS", "chunked_draw", "create", "random_plan"]

CREATORS = frozenset({"zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace"})

# Distributions whose chunked, chained draws equal one draw (tests/test_dask_random.py checks
# each against NumPy on every bit generator).
_COMMON = frozenset({
    "standard_normal", "normal", "uniform", "exponential", "standard_exponential", "gamma", "standard_gamma",
    "beta", "poisson", "binomial", "lognormal", "laplace", "logistic", "gumbel", "chisquare", "standard_t",
    "standard_cauchy", "pareto", "weibull", "power", "rayleigh", "geometric", "negative_binomial",
    "hypergeometric", "logseries", "zipf", "wald", "vonmises", "triangular", "f", "noncentral_chisquare",
    "noncentral_f",
})
CHAINED = {
    "generator": _COMMON | {"random", "integers"},
    "legacy": _COMMON | {"random", "random_sample", "ranf", "sample", "rand", "randn", "randint"},
}
_JUMP_BIT_GENERATORS = frozenset({"PCG64", "PCG64DXSM"})
_JUMPS = frozenset({"random", "uniform"})  # one 64-bit draw per float64 value


# ---- creation -------------------------------------------------------------------------------------------


@functools.cache
def _signature(name: str) -> inspect.Signature:
    return inspect.signature(getattr(np, name))


def create(target: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """``numpy.<name>(*args, **kwargs)`` as a chunked Dask array."""
    try:
        bound = _signature(name).bind(*args, **kwargs)
    except TypeError as exc:
        raise Unsupported(f"NumPy rejects these arguments: {exc}") from None
    bound.apply_defaults()
    p = bound.arguments
    if p.get("like") is not None or p.get("device") not in (None, "cpu"):
        raise Unsupported("like= or device=")
    da = target.da
    if name in ("arange", "linspace"):
        out = _arange(target, args, kwargs) if name == "arange" else _linspace(target, p)
    else:
        if name in ("eye", "identity"):
            n = operator.index(p["N"] if name == "eye" else p["n"])
            m = n if name == "identity" or p["M"] is None else operator.index(p["M"])
            dtype = np.dtype(p["dtype"] if p["dtype"] is not None else float)
            # Square chunks no taller than the matrix: Dask's eye leaves out column chunks when
            # its chunk side lies between N and M.
            side = max(1, min(int(math.sqrt(cluster.chunk_bytes() / dtype.itemsize)), n))
            out = da.eye(n, chunks=side, M=m, k=operator.index(p.get("k", 0)), dtype=dtype)
        else:
            shape = _shape(p["shape"])
            if name == "full":
                fill = p["fill_value"]
                if np.ndim(fill) != 0:
                    raise Unsupported("an array fill_value")
                dtype = np.dtype(p["dtype"]) if p["dtype"] is not None else np.array(fill).dtype
                out = da.full(shape, fill, dtype=dtype, chunks=target.chunks(shape, dtype))
            else:
                dtype = np.dtype(p["dtype"] if p["dtype"] is not None else float)
                out = getattr(da, name)(shape, dtype=dtype, chunks=target.chunks(shape, dtype))
        if out.dtype.kind not in "biufc":
            raise Unsupported(f"dtype {out.dtype}")
    if isinstance(out, tuple):  # linspace(retstep=True)
        return (target.on_gpu(out[0]) if cluster.gpu_workers() else out[0]), out[1]
    return target.on_gpu(out) if cluster.gpu_workers() else out


def _shape(shape: Any) -> tuple[int, ...]:
    return (operator.index(shape),) if np.ndim(shape) == 0 else tuple(operator.index(n) for n in shape)


def _real_scalar(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _arange(target: Any, args: tuple, kwargs: dict) -> Any:
    start, stop, step = cluster.arange_args(args, kwargs)
    dtype = kwargs.get("dtype")
    if not all(_real_scalar(v) for v in (start, stop, step)) or step == 0:
        raise Unsupported("arange of other than real scalars")
    # NumPy's result dtype, from an empty call with arguments of the same types
    dtype = np.arange(type(start)(0), type(stop)(0), step, dtype=dtype).dtype
    if dtype.kind not in "iuf" or dtype.itemsize > 8 or dtype == np.float16:
        raise Unsupported(f"arange in {dtype} (NumPy's fill differs for it)")
    n = max(0, math.ceil((stop - start) / step))
    first = np.empty(2, dtype)
    first[0] = start  # set as NumPy sets them: the start and start + step, in the result dtype
    first[1] = start + step
    return _blockwise(target, "arange", n, dtype, lambda lo, hi: (blocks.arange_block, lo, hi, first, False))


def _linspace(target: Any, p: dict) -> Any:
    start, stop, num, endpoint = p["start"], p["stop"], operator.index(p["num"]), bool(p["endpoint"])
    if not (_real_scalar(start) and _real_scalar(stop)) or p["axis"] not in (0, -1) or num < 0:
        raise Unsupported("linspace of other than real scalars")
    dt = np.linspace(start, stop, 0).dtype  # the dtype NumPy computes in
    dtype = np.dtype(p["dtype"]) if p["dtype"] is not None else dt
    out = _blockwise(target, "linspace", num, dtype, lambda lo, hi: (
        blocks.linspace_block, lo, hi, num, start, stop, endpoint, dt, p["dtype"], False))
    if not p["retstep"]:
        return out
    div = (num - 1) if endpoint else num
    delta = np.subtract(np.asarray(stop), np.asarray(start), dtype=type(dt))
    return out, (delta / div if div > 0 else np.nan)


def _blockwise(target: Any, label: str, n: int, dtype: np.dtype, task: Any) -> Any:
    """A 1-D array of ``n`` elements whose chunk ``lo:hi`` is the task ``task(lo, hi)``."""
    from dask.array import Array
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    (chunks,) = target.chunks((n,), dtype)
    name = f"{label}-" + tokenize(task(0, n), chunks)
    dsk, lo = {}, 0
    for i, size in enumerate(chunks):
        dsk[(name, i)] = task(lo, lo + size)
        lo += size
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
    return Array(graph, name, (chunks,), meta=np.empty((0,), dtype))


# ---- random draws -----------------------------------------------------------------------------------------


def random_plan(kind: str, method: str, bound_method: Any, args: tuple, kwargs: dict) -> tuple | None:
    """``(parameters, shape, dtype)`` of a draw that can be chunked, or ``None`` (draw on the host).

    ``kind`` is ``"generator"`` or ``"legacy"``; ``bound_method`` is NumPy's method (its
    signature names the parameters; a zero-size call finds the dtype and lets NumPy reject
    bad parameters as it would)."""
    if method not in CHAINED[kind]:
        return None
    if method in ("rand", "randn"):
        if kwargs or not all(isinstance(n, (int, np.integer)) for n in args):
            return None
        params, size = {}, tuple(int(n) for n in args)
        method_for_size = "random_sample" if method == "rand" else "standard_normal"
    else:
        try:
            bound = inspect.signature(bound_method).bind(*args, **kwargs)
        except (TypeError, ValueError):
            return None
        params = dict(bound.arguments)
        size = params.pop("size", None)
        if params.pop("out", None) is not None or size is None:
            return None
        method_for_size = method
    if not all(np.ndim(v) == 0 and not isinstance(v, np.ndarray) for k, v in params.items() if k != "dtype"):
        return None  # array parameters: the draw stays on the host
    shape = _shape(size)
    probe = getattr(bound_method.__self__, method_for_size)
    dtype = probe(size=0, **params).dtype if method not in ("rand", "randn") else np.dtype(float)
    if method in ("integers", "randint") and dtype.itemsize < 4:
        return None  # NumPy buffers 8- and 16-bit draws within one call
    return (method_for_size, params, shape, dtype)


def jumpable(state: Any, method: str, dtype: np.dtype) -> bool:
    return (isinstance(state, dict) and state.get("bit_generator") in _JUMP_BIT_GENERATORS
            and method in _JUMPS and dtype == np.float64)


def advanced(state: dict, n: int) -> dict:
    """``state`` after ``n`` 64-bit draws (the cached 32-bit half is kept, as float64 draws
    do not touch it)."""
    bit_generator = getattr(np.random, state["bit_generator"])()
    bit_generator.state = state
    bit_generator.advance(n)
    out = bit_generator.state
    out["has_uint32"], out["uinteger"] = state["has_uint32"], state["uinteger"]
    return out


def stream_chunks(shape: tuple[int, ...], itemsize: int, limit: int) -> tuple[tuple[int, ...], ...]:
    """Chunks that are runs of consecutive elements in C order: one chunk across the trailing
    axes that fit in ``limit`` bytes, ``c`` items along the next axis, single items before it."""
    inner = itemsize
    for k in range(len(shape) - 1, -1, -1):
        if inner * shape[k] > limit:
            c = max(1, limit // inner)
            along = tuple(min(c, shape[k] - i) for i in range(0, shape[k], c))
            return (*tuple((1,) * n for n in shape[:k]), along, *tuple((n,) for n in shape[k + 1:]))
        inner *= shape[k]
    return tuple((n,) for n in shape)


def chunked_draw(state: Any, legacy: bool, plan: tuple) -> tuple[Any, Any]:
    """A Dask array of the draw ``plan`` starting from ``state`` (a state dict, or a Dask
    ``Delayed`` state a previous chunked draw left), and the state it leaves: a dict when it is
    known at once (jumps), else a ``Delayed``."""
    from dask.array import Array
    from dask.base import tokenize
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    method, params, shape, dtype = plan
    gpu = cluster.gpu_workers()
    chunks = stream_chunks(shape, dtype.itemsize, cluster.chunk_bytes())
    grid = [len(c) for c in chunks]
    pending = isinstance(state, Delayed)
    spec = _literal((method, params, legacy, gpu))
    token = tokenize(state.key if pending else state, spec, shape, chunks)
    name, pairs, states = f"draw-{method}-{token}", f"draw-pair-{token}", f"draw-state-{token}"
    meta = np.empty((0,) * len(shape), dtype)
    dsk: dict = {}
    if not pending and not legacy and jumpable(state, method, dtype):
        offset = 0
        for index in np.ndindex(*grid):
            block = tuple(c[i] for c, i in zip(chunks, index, strict=True))
            dsk[(name, *index)] = (blocks.draw_block, _literal(advanced(state, offset)), spec, block)
            offset += math.prod(block)
        graph = HighLevelGraph.from_collections(name, dsk, dependencies=())
        return Array(graph, name, chunks, meta=meta), advanced(state, offset)
    previous = state.key if pending else (states, -1)
    if not pending:
        dsk[previous] = _literal(state)
    for i, index in enumerate(np.ndindex(*grid)):
        block = tuple(c[j] for c, j in zip(chunks, index, strict=True))
        dsk[(pairs, i)] = (blocks.draw_pair, previous, spec, block)
        dsk[(name, *index)] = (blocks.chunk_of, (pairs, i))
        dsk[(states, i)] = (blocks.final_state, (pairs, i))
        previous = (states, i)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[state] if pending else [])
    return Array(graph, name, chunks, meta=meta), Delayed(previous, graph, layer=name)


def _literal(value: Any) -> tuple:
    """A task giving ``value`` back (states and parameters hold dicts and types, which a task
    graph would otherwise read as tasks)."""
    return (pickle.loads, pickle.dumps(value))
