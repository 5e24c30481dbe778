"""The ``dask`` target: chunked arrays on a Dask cluster (or Dask's threaded scheduler in
this process), NumPy chunks on CPU workers or CuPy chunks on GPU workers.

It is reached by size, not priced: ``dispatch.cluster.route`` sends work here when it would
not fit in memory, when a cluster is connected and the work spans chunks, or when data is
already here; ``using("dask")`` forces it. Its device is ``Device("dask")``: one memory space,
the cluster's (``dispatch.cluster.address()`` names the scheduler).

Results stay lazy (Dask graphs) until they are materialised: printed (only the corners
NumPy's summary shows are computed), converted (``numpy.asarray``, ``float``, ``.item()``),
or computed with ``dispatch.compute`` / ``x.persist()``.

An op runs as ``dask.array.<same name>`` (ufuncs through Dask's ``__array_ufunc__``); what
Dask does not implement, or implements with other semantics, is refused (``Unsupported``),
so the call computes its operands and runs on NumPy, recorded once in the trace, and Dask's
own "not implemented by Dask" FutureWarning never appears. Differences handled here:

- ``take`` flattens by default in NumPy, takes along axis 0 in Dask: axis ``None`` ravels first.
- ``linalg.cholesky``: Dask returns the upper factor by default; NumPy's is the lower.
- ``linalg.svd``: Dask computes the reduced factorisation of a tall-and-skinny (or short-and-
  fat) matrix with one chunk across its short side; ``full_matrices=True`` is refused unless
  the matrix is square. ``linalg.qr``: mode ``"reduced"`` only.
- FFTs need the transformed axes in one chunk: they are rechunked so.
- percentiles and quantiles: Dask's are approximate on chunked data; refused. ``unique`` and
  ``union1d`` of floating arrays too (NaNs and signed zeros come out otherwise).
- Results whose shape depends on values (boolean indexing, ``nonzero``, ``unique``) get their
  chunk sizes computed at once, so shapes are known as in NumPy.
- Empty operands hold no values: NumPy itself runs on them, so their results and errors are
  NumPy's, and nothing is computed.
- A call NumPy rejects on stand-ins of its arguments (``dispatch.targets._oracle``: same dtypes,
  axes cut to two) is refused, so NumPy raises its own error.
- Errors that depend on values (a singular matrix, an index out of range, a negative integer
  exponent): operands that fit in one chunk go to NumPy, which raises at the call; on larger
  ones Dask raises the same error when the result is computed. An integer index array held by
  Dask is computed first (Dask would read out-of-range indices of a lazy one as other elements).
- Linear algebra computes integers in float64, as NumPy's does; ``lstsq`` is computed at once
  (its outputs are small, and NumPy's residuals depend on the rank).
- A read-only host array (a broadcast view, a read-only memory map) stays read-only in Dask.
- No views: an array sliced from a Dask array does not see later writes into it. No memory
  layout: a Dask array computes to C order (``ascontiguousarray`` and ``require`` hand it back).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from dispatch import cluster
from dispatch.base import box
from dispatch.base.box import device_scalar
from dispatch.base.devices import DASK
from dispatch.base.tiers import Backend
from dispatch.targets import _dask_create, registry
from dispatch.targets._dask_blocks import to_gpu
from dispatch.targets._dask_print import text
from dispatch.targets._oracle import expected, rejects
from dispatch.targets.protocol import Target, Unavailable, Unsupported, dtypes_of_kinds

__all__ = ["DaskTarget"]

_KINDS = "biufc"
_READ_ONLY = "_dispatch_read_only"  # set on the Dask snapshot of a read-only host array

# NumPy names Dask spells otherwise.
_ALIASES = {
    "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
    "atanh": "arctanh", "atan2": "arctan2", "pow": "power", "conjugate": "conj", "bitwise_invert": "invert",
    "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift", "amax": "max", "amin": "min",
    "concat": "concatenate", "permute_dims": "transpose",
}

# Functions Dask has under NumPy's name but with other results.
_REFUSED = {
    "percentile": "Dask's percentile is approximate on chunked data",
    "nanpercentile": "Dask's nanpercentile is approximate on chunked data",
    "quantile": "Dask's quantile is approximate on chunked data",
    "nanquantile": "Dask's nanquantile is approximate on chunked data",
    "fromfunction": "Dask's fromfunction takes chunks where NumPy takes the shape",
    "sort": "Dask has no distributed sort (dask.array.topk gives the k largest)",
    "argsort": "Dask has no distributed sort",
    "partition": "Dask has no distributed partition",
    "argpartition": "Dask has no distributed partition",
    "lexsort": "Dask has no distributed sort",
    "sort_complex": "Dask has no distributed sort",
}

# Ops that are methods of a Dask array rather than functions of dask.array.
_METHODS = {"copy", "astype", "ascontiguousarray", "asfortranarray"}

# Ops whose arguments hold indices or lengths (or dimension counts): stand-ins cut to two
# elements can be rejected where the call itself is valid, so Dask runs them and raises what
# NumPy would, itself.
_INDEX_VALUED = frozenset({
    "take", "compress", "choose", "delete", "insert", "repeat", "ravel_multi_index", "unravel_index",
    "histogramdd", "histogram2d", "cross", "linalg.cross", "linalg.tensorinv", "linalg.tensorsolve",
})

# Sorting results where Dask's differ for floating inputs, however they are chunked.
_INEXACT_REFUSED = {
    "unique": "Dask's unique counts NaNs apart (NumPy collapses them) and may keep the other of -0.0 and 0.0",
    "union1d": "Dask's union1d may keep the other of -0.0 and 0.0 than NumPy's",
}


class DaskTarget(Target):
    """Dask arrays: ``dask.array.<the op's name>`` (or its alias), refused where Dask differs."""

    name = "dask"
    device = DASK
    tier = Backend.SIMD
    library = "dask"

    def __init__(self) -> None:
        try:
            import dask
            import dask.array as da
        except Exception as exc:
            raise Unavailable(f"dask.array cannot be imported: {type(exc).__name__}: {exc}") from None
        try:
            cluster.client()  # a scheduler named by DISPATCH_DASK_SCHEDULER is reached now
        except ConnectionError as exc:
            raise Unavailable(str(exc)) from None
        self.dask = dask
        self.da = da

    # ---- conversions ------------------------------------------------------------------------------

    def owns(self, native: Any) -> bool:
        return isinstance(native, self.da.Array)

    def dtype_of(self, native: Any) -> np.dtype:
        return native.dtype

    def chunks(self, shape: tuple[int, ...], dtype: Any) -> tuple:
        """Chunks of about ``cluster.chunk_bytes()`` each."""
        from dask.array.core import normalize_chunks

        if 0 in shape:  # nothing to split (Dask's automatic chunking divides by the size)
            return tuple((n,) for n in shape)
        return normalize_chunks("auto", shape, limit=cluster.chunk_bytes(), dtype=np.dtype(dtype))

    def from_host(self, array: np.ndarray) -> Any:
        """A snapshot of a host array, chunked (Dask arrays are lazy: later writes into the host
        array must not show through). With a cluster connected the chunks are sent at once,
        inside the task graph, so a lost worker's chunks are made again from it (scattered
        data would be lost with the worker); else the chunks are a private copy."""
        if array.dtype.kind not in _KINDS:
            raise Unsupported(f"dtype {array.dtype} is not chunked by dispatch")
        chunks = self.chunks(array.shape, array.dtype)
        client = cluster.client()
        writeable = array.flags.writeable
        if client is None and writeable:
            array = array.copy()
        out = self.da.from_array(array, chunks=chunks, inline_array=True, name=_host_name())
        if cluster.gpu_workers():
            out = self.on_gpu(out)
        if client is not None:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "Sending large graph", UserWarning)  # it is the data itself
                out = client.persist(out)
        if not writeable:  # a broadcast view, a read-only memory map: writes raise, as NumPy's do
            setattr(out, _READ_ONLY, True)
        return out

    def on_gpu(self, arr: Any) -> Any:
        """NumPy chunks as CuPy chunks (GPU workers)."""
        import cupy


        return arr.map_blocks(to_gpu, dtype=arr.dtype, meta=cupy.empty((0,) * arr.ndim, arr.dtype))

    def to_host(self, native: Any) -> np.ndarray:
        with cluster.active():
            return _host_array(native.compute())

    def adopt(self, native: Any) -> Any:
        return native if self.owns(native) else self.from_host(np.asarray(native))

    def assign(self, dst: Any, src: Any) -> None:
        _check_writeable(dst)
        if not self.owns(src):
            src = np.asarray(src) if type(src).__module__.startswith("numpy") else src
        if dst.size == 0:  # nothing to write (Dask cannot assign into an empty array)
            np.broadcast_shapes(np.shape(src), dst.shape)
            return
        dst[...] = src

    def view(self, native: Any, dtype: np.dtype | None) -> Any:
        return native if dtype is None else native.view(dtype)

    # ---- materialising part of an array ------------------------------------------------------------

    def item(self, native: Any, args: tuple) -> Any:
        """``a.item(i)`` / ``a.item(i, j)``: computes that element only."""
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        if len(args) == 1 and native.ndim != 1:
            size = math.prod(native.shape)
            index = int(args[0])
            if not -size <= index < size:
                raise IndexError(f"index {index} is out of bounds for size {size}")
            args = np.unravel_index(index % size, native.shape)
        return self.to_host(native[tuple(int(i) for i in args)]).item()

    def text(self, native: Any, how: Any) -> str:
        """``repr`` / ``str`` as NumPy prints the whole array, computing only the corners
        NumPy's summary shows (see ``dispatch.targets._dask_print``)."""

        return text(native, how, self.to_host)

    # ---- running ops -------------------------------------------------------------------------------

    def supports(self, op: Any) -> bool:
        return op.name not in _REFUSED

    def run(self, op: Any, args: tuple, kwargs: dict) -> Any:
        with cluster.active():
            return self._run(op, op.name, args, kwargs)

    def _run(self, op: Any, name: str, args: tuple, kwargs: dict) -> Any:
        if name == "__getitem__":
            return _indexed(args[0], _dask_key(args[1]))
        if name == "__setitem__":
            _check_writeable(args[0])
            key = _dask_key(args[1])
            if getattr(args[2], "ndim", 0):  # Dask assigns an array through a lazy mask only if it knows its size
                key = tuple(_computed_mask(k) for k in key) if isinstance(key, tuple) else _computed_mask(key)
            args[0][key] = args[2]
            return None
        arrays = _arrays(args, kwargs, self.da.Array)
        for a in arrays:
            if a.dtype.kind not in _KINDS:
                raise Unsupported(f"dtype {a.dtype}")
        if op.work == "create" and name in _creation().CREATORS:
            return _creation().create(self, name, args, kwargs)
        self._check(op, name, args, kwargs)
        if arrays and all(a.size == 0 for a in arrays):
            return self._on_empty(op, args, kwargs)
        if name in _VALUE_ERRORS and _one_chunk(arrays) and _VALUE_ERRORS[name][1](args):
            # Dask for data that fits one chunk gains nothing: NumPy raises at the call.
            raise Unsupported(f"{_VALUE_ERRORS[name][0]}: Dask meets it only when computing, NumPy at the call")
        own = _OWN.get(name)
        fn = self._function(op) if own is None else None
        # NumPy's result dtypes, learned from stand-ins (axes cut to two elements). A call NumPy
        # rejects on them (a dtype it refuses, shapes that do not fit) is refused: NumPy raises
        # its own error. Where stand-ins can mislead (arguments holding indices or lengths),
        # Dask's own dtypes serve and Dask raises what NumPy would.
        want = None if op.local else expected(op.func, args, kwargs, _dtype_of)
        if want is None and not op.local and name not in _INDEX_VALUED and rejects(op.func, args, kwargs, _dtype_of):
            raise Unsupported("NumPy rejects this call (its dtypes, or its shapes cut to two): it decides the error")
        if own is not None:
            result = own(self, args, kwargs)
        else:
            args, kwargs = _ADAPT.get(name, _same)(self, args, kwargs)
            with warnings.catch_warnings():
                # Dask's "not implemented by Dask" FutureWarning cannot arise (unimplemented ops are
                # refused above); its chunking advice is not the user's concern.
                warnings.simplefilter("ignore", FutureWarning)
                warnings.simplefilter("ignore", getattr(self.da, "PerformanceWarning", FutureWarning))
                result = fn(*args, **kwargs)
        return _match(self.da, result, want, scalar_0d=not op.local)

    def _on_empty(self, op: Any, args: tuple, kwargs: dict) -> Any:
        """NumPy itself on empty operands: an empty array holds no values, so ``numpy.empty``
        of its shape and dtype is the array, and nothing is computed. Every edge case of empty
        input (a reduction without identity, an FFT of no points, an index into nothing) is
        NumPy's own; the result is chunked again (an argument NumPy hands back is the Dask one)."""
        originals: dict[int, Any] = {}

        def host(value: Any) -> Any:
            if isinstance(value, self.da.Array):
                empty = np.empty(value.shape, value.dtype)
                originals[id(empty)] = value
                return empty
            if type(value) in (list, tuple):
                return type(value)(host(v) for v in value)
            return value

        try:
            result = op.func(*host(args), **{k: host(v) for k, v in kwargs.items()})
        except Exception as exc:
            raise Unsupported(f"NumPy raises {type(exc).__name__} for this empty input: it decides") from None
        return self._from_numpy(result, originals)

    def _from_numpy(self, result: Any, originals: dict[int, Any]) -> Any:
        """A NumPy result as this target's: arrays chunked, NumPy scalars as device scalars."""
        if isinstance(result, np.ndarray):
            return originals[id(result)] if id(result) in originals else self.from_host(result)
        if isinstance(result, np.generic):
            return device_scalar(self.from_host(np.asarray(result)))
        if isinstance(result, tuple) and hasattr(result, "_fields"):
            return type(result)(*(self._from_numpy(r, originals) for r in result))
        if type(result) in (list, tuple):
            return type(result)(self._from_numpy(r, originals) for r in result)
        return result

    def _check(self, op: Any, name: str, args: tuple, kwargs: dict) -> None:
        if name in _REFUSED:
            raise Unsupported(_REFUSED[name])
        if op.work in ("host", "random") or not op.cataloged:
            raise Unsupported("host work (I/O, printing, random streams) runs on NumPy")
        if op.mutates is not None:
            raise Unsupported("it writes into an argument")
        if op.ufunc is not None and op.method != "__call__":
            raise Unsupported(f"Dask has no ufunc method {op.method}")
        if kwargs.get("out") is not None:
            raise Unsupported("out= into a host array")
        if "like" in kwargs and kwargs["like"] is not None:
            raise Unsupported("like=")
        if name in _INEXACT_REFUSED and any(a.dtype.kind in "fc" for a in _arrays(args, kwargs, self.da.Array)):
            raise Unsupported(_INEXACT_REFUSED[name], lasting=True)

    def _function(self, op: Any) -> Any:
        fn = op.cache.get("dask")
        if fn is None:
            if op.ufunc is not None:
                fn = op.func if op.ufunc.signature is None or op.ufunc is np.matmul else False
            elif op.name in _METHODS:
                fn = _method(op.name)
            else:
                fn = self.da
                for part in _ALIASES.get(op.name, op.name).split("."):
                    fn = getattr(fn, part, None)
                fn = fn if callable(fn) else False
            op.cache["dask"] = fn
        if fn is False:
            raise Unsupported(f"Dask has no {op.name}")
        return fn


# ---- errors that depend on the values ------------------------------------------------------------------

# Calls that fail on some values (a singular or not positive definite matrix, NaNs an SVD does
# not converge on, an index or a choice out of range, an all-NaN slice, a negative integer
# exponent), which Dask meets only when it computes. Operands that fit in one chunk, where Dask
# gains nothing, go to NumPy, which raises at the call.
# Larger data is not read twice to look first: the same error is raised when the result is computed.
# name -> (what may fail, whether this call can fail so)
_VALUE_ERRORS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(["linalg.inv", "linalg.solve", "linalg.cholesky", "linalg.svd"],
                    ("a singular, not positive definite or non-finite matrix", lambda args: True)),
    "choose": ("a choice out of range", lambda args: True),
    "ravel_multi_index": ("an index out of range", lambda args: True),
    "unravel_index": ("an index out of range", lambda args: True),
    **dict.fromkeys(["nanargmax", "nanargmin"], ("an all-NaN slice", lambda args: _kind(args[0]) in "fc")),
    **dict.fromkeys(["power", "pow"], ("a negative integer exponent", lambda args: _integer_power(*args[:2]))),
}


def _kind(x: Any) -> str:
    """The dtype kind of an array or a scalar; Python numbers count as NumPy's weak scalars."""
    if hasattr(x, "dtype"):
        return x.dtype.kind
    return {bool: "b", int: "i", float: "f", complex: "c"}.get(type(x), "O")


def _integer_power(base: Any, exponent: Any = 1.0) -> bool:
    """Whether NumPy raises for a negative exponent here: integer powers by a signed array."""
    return _kind(base) in "biu" and _kind(exponent) == "i" and hasattr(exponent, "dtype")


def _one_chunk(arrays: list[Any]) -> bool:
    """Whether the operands together fit in one chunk."""
    return sum(a.nbytes for a in arrays) <= cluster.chunk_bytes()


# ---- ops run here rather than as dask.array's: (target, args, kwargs) -> result ----------------------------


def _real(target: Any, args: tuple, kwargs: dict) -> Any:
    """A real array's real part is the array itself in NumPy."""
    a = args[0] if args else kwargs["val"]
    return a if a.dtype.kind != "c" else target.da.real(a)


def _real_if_close(target: Any, args: tuple, kwargs: dict) -> Any:
    a = args[0] if args else kwargs["a"]
    if a.dtype.kind != "c":
        return a
    raise Unsupported("real_if_close of a complex array: its result dtype depends on the values", lasting=True)


def _asarray_chkfinite(target: Any, args: tuple, kwargs: dict) -> Any:
    """The array itself once it is known to be finite: one pass over it, on the cluster."""
    a, *rest = args
    dtype = rest[0] if rest else kwargs.get("dtype")
    if rest[1:] or kwargs.get("order") not in (None, "C", "F", "A", "K"):
        raise Unsupported("asarray_chkfinite with order=")
    if dtype is not None and np.dtype(dtype) != a.dtype:
        a = a.astype(dtype)
    if a.dtype.kind in "fc" and not bool(_host_array(target.da.isfinite(a).all().compute())):
        raise Unsupported("infinities or NaNs: NumPy raises")
    return a


def _require(target: Any, args: tuple, kwargs: dict) -> Any:
    """A Dask array has no memory layout (it computes to C order), owns what it holds and is
    writable unless made from a read-only host array: only a dtype, or writability, changes it."""
    a, *rest = args
    dtype = rest[0] if rest else kwargs.get("dtype")
    requirements = rest[1] if len(rest) > 1 else kwargs.get("requirements")
    if len(rest) > 2 or kwargs.keys() - {"dtype", "requirements"}:
        raise Unsupported("require with like=")
    wanted = {requirements} if isinstance(requirements, str) else set(requirements or ())
    wanted = {_REQUIREMENTS.get(str(r).upper(), "?") for r in wanted}
    if "?" in wanted or {"C", "F"} <= wanted:
        raise Unsupported(f"require({requirements!r}): NumPy decides")
    out = a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    if "W" in wanted and getattr(out, _READ_ONLY, False):
        out = out.copy()  # NumPy copies a read-only array
    return out


_REQUIREMENTS = {
    **dict.fromkeys(["C", "C_CONTIGUOUS", "CONTIGUOUS"], "C"), **dict.fromkeys(["F", "F_CONTIGUOUS", "FORTRAN"], "F"),
    **dict.fromkeys(["A", "ALIGNED"], "A"), **dict.fromkeys(["W", "WRITEABLE"], "W"),
    **dict.fromkeys(["O", "OWNDATA"], "O"), **dict.fromkeys(["E", "ENSUREARRAY"], "E"),
}


def _squeeze(target: Any, args: tuple, kwargs: dict) -> Any:
    a = args[0] if args else kwargs["a"]
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    if a.ndim == 0 and axis is None:
        return a  # NumPy hands a 0-d array back
    return target.da.squeeze(a, axis=axis)


def _flip(target: Any, args: tuple, kwargs: dict) -> Any:
    a = args[0] if args else kwargs["m"]
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    if a.ndim == 0 and axis is None:
        return device_scalar(a.copy())  # NumPy indexes with (): a scalar
    return target.da.flip(a, axis=axis)


def _allclose(target: Any, args: tuple, kwargs: dict) -> bool:
    """NumPy's ``allclose`` is a Python bool: computed on the cluster, read back."""
    return bool(_host_array(target.da.allclose(*args, **kwargs).compute()))


def _searchsorted(target: Any, args: tuple, kwargs: dict) -> Any:
    """Dask searches an array of values: a 0-d one is searched as one element."""
    p = {**dict(zip(("a", "v", "side", "sorter"), args, strict=False)), **kwargs}
    v, side, sorter = p["v"], p.get("side", "left"), p.get("sorter")
    if getattr(v, "ndim", np.ndim(v)) != 0:
        return target.da.searchsorted(p["a"], v, side=side, sorter=sorter)
    return target.da.searchsorted(p["a"], target.da.asarray(v).reshape(1), side=side, sorter=sorter)[0]


def _lstsq_now(target: Any, args: tuple, kwargs: dict) -> Any:
    """Least squares on a tall matrix, computed at once (its outputs are small: n × k, and the
    rank decides what NumPy returns). A rank-deficient matrix goes to NumPy: Dask solves with
    its QR factors, NumPy gives the least-norm solution; so does one Dask cannot factorise
    (non-finite values). A square matrix has empty residuals, as in NumPy."""
    import dask

    (a, b), _ = _lstsq(target, args, kwargs)
    try:
        x, residuals, rank, s = dask.compute(*target.da.linalg.lstsq(a, b))
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise Unsupported(f"Dask's lstsq failed: {exc}") from None
    if int(rank) < a.shape[1]:
        raise Unsupported("a rank-deficient matrix: NumPy's solution is the least-norm one")
    residuals = _host_array(residuals)
    if a.shape[0] == a.shape[1]:
        residuals = np.empty((0,), residuals.dtype)
    return tuple(target.from_host(np.asarray(_host_array(v))) for v in (x, residuals, rank, s))


_OWN = {
    "real": _real,
    "real_if_close": _real_if_close,
    "asarray_chkfinite": _asarray_chkfinite,
    "require": _require,
    "squeeze": _squeeze,
    "flip": _flip,
    "allclose": _allclose,
    "searchsorted": _searchsorted,
    "linalg.lstsq": _lstsq_now,
}


# ---- per-op adapters: (target, args, kwargs) -> (args, kwargs) ---------------------------------------


def _same(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    return args, kwargs


def _take(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    a, indices, *rest = args
    axis = rest[0] if rest else kwargs.pop("axis", None)
    if kwargs.pop("mode", "raise") != "raise" or rest[1:]:
        raise Unsupported("take with mode= or out=")
    indices = _concrete(indices)
    if axis is None:
        return (target.da.ravel(a), indices, 0), kwargs
    return (a, indices, axis), kwargs


def _power(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """An integer array to a negative scalar power is an error NumPy raises at once."""
    if len(args) > 1 and _kind(args[0]) in "biu" and isinstance(args[1], (int, np.integer)) \
            and not isinstance(args[1], bool) and args[1] < 0:
        raise Unsupported("an integer array to a negative power: NumPy raises")
    return args, kwargs


def _flat_if_no_axis(at: int, ravel: tuple[int, ...] = (0,)) -> Any:
    """NumPy flattens when ``axis`` is ``None`` (the default of insert, delete, append, repeat);
    Dask needs an axis: the arguments at ``ravel`` are raveled and the axis is 0."""

    def adapt(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        args = list(args)
        axis = args[at] if len(args) > at else kwargs.get("axis")
        if axis is not None:
            return tuple(args), kwargs
        for i in ravel:
            args[i] = target.da.ravel(target.da.asarray(args[i]))
        if len(args) > at:
            args[at] = 0
        else:
            kwargs = {**kwargs, "axis": 0}
        return tuple(args), kwargs

    return adapt


def _cholesky(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    a = args[0]
    if a.ndim != 2 or kwargs.pop("upper", False):
        raise Unsupported("stacked or upper Cholesky factors")
    return (_square_chunks(_float(a)),), {"lower": True}


def _square_chunks(a: Any) -> Any:
    """Dask's LU and Cholesky need every chunk square and of one size: a divisor of the side
    near the chunk size (one chunk if the side has none near it)."""
    if len(set(a.chunks[0] + a.chunks[1])) == 1:
        return a
    n = a.shape[0]
    want = max(1, int(math.sqrt(cluster.chunk_bytes() / a.dtype.itemsize)))
    sides = [d for i in range(1, math.isqrt(n) + 1) if n % i == 0 for d in (i, n // i)]
    near = [d for d in sides if want // 4 <= d <= 2 * want]
    side = min(near, key=lambda d: abs(d - want)) if near else n
    return a.rechunk((side, side))


def _solve(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    a, b = args[0], args[1]
    if a.ndim != 2 or b.ndim not in (1, 2) or kwargs:
        raise Unsupported("stacked matrices")
    a = _square_chunks(_float(a))
    b = _float(target.da.asarray(b).rechunk((a.chunks[0], *b.chunks[1:])) if hasattr(b, "rechunk") else b)
    return (a, b), {}


def _inv(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    if args[0].ndim != 2:
        raise Unsupported("stacked matrices")
    return (_square_chunks(_float(args[0])),), kwargs


def _svd(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    a = args[0]
    names = ("full_matrices", "compute_uv", "hermitian")
    opts = dict(zip(names, args[1:], strict=False)) | kwargs
    if a.ndim != 2 or opts.get("hermitian", False) or opts.get("compute_uv", True) is False:
        raise Unsupported("stacked matrices, hermitian=True or compute_uv=False")
    if opts.get("full_matrices", True) and a.shape[0] != a.shape[1]:
        raise Unsupported("full_matrices=True of a non-square matrix (Dask computes the reduced SVD)")
    return (_skinny(_float(a)),), {}


def _skinny(a: Any) -> Any:
    """One chunk across the short side, as Dask's TSQR-based factorisations need."""
    m, n = a.shape
    if m >= n and len(a.chunks[1]) > 1:
        return a.rechunk({1: -1, 0: "auto"})
    if m < n and len(a.chunks[0]) > 1:
        return a.rechunk({0: -1, 1: "auto"})
    return a


def _qr(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    a = args[0]
    mode = args[1] if len(args) > 1 else kwargs.get("mode", "reduced")
    if a.ndim != 2 or mode != "reduced" or a.shape[0] < a.shape[1]:
        raise Unsupported("only the reduced QR of a tall (or square) matrix")
    return (_skinny(_float(a)),), {}


def _lstsq(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    a, b, *rest = args
    rcond = rest[0] if rest else kwargs.pop("rcond", None)
    if rcond is not None or kwargs or a.ndim != 2 or a.shape[0] < a.shape[1]:
        raise Unsupported("lstsq of a wide matrix, or with rcond=")
    a = _skinny(_float(a))
    b = _float(target.da.asarray(b).rechunk((a.chunks[0], *b.chunks[1:])) if hasattr(b, "rechunk") else b)
    return (a, b), {}


def _float(a: Any) -> Any:
    """NumPy's linear algebra computes on integers and booleans in float64."""
    return a.astype(np.float64) if getattr(a, "dtype", np.dtype("f8")).kind in "biu" else a


def _reshape(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Dask reshapes only by merging or splitting axes: other shapes go through the flat array."""
    a, shape = args[0], args[1] if len(args) > 1 else kwargs.pop("shape", kwargs.pop("newshape", None))
    if kwargs.get("order", "C") != "C" or len(args) > 2:
        raise Unsupported("reshape in other than C order")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        target.da.reshape(a, shape)  # builds a graph only: cheap
    except NotImplementedError:
        a = target.da.reshape(a, (-1,))
    return (a, shape), {}


def _fft(axes_of: Any) -> Any:
    def adapt(target: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        a = args[0]
        if not hasattr(a, "rechunk"):
            return args, kwargs
        axes = axes_of(a, args, kwargs)
        if any(len(a.chunks[ax]) > 1 for ax in axes):
            a = a.rechunk({ax: (-1 if ax in axes else "auto") for ax in range(a.ndim)})
        return (a, *args[1:]), kwargs

    return adapt


def _axis_1d(a: Any, args: tuple, kwargs: dict) -> list[int]:
    axis = args[2] if len(args) > 2 else kwargs.get("axis", -1)
    return [axis % a.ndim]


def _axes_nd(last: int | None) -> Any:
    def axes(a: Any, args: tuple, kwargs: dict) -> list[int]:
        given = args[2] if len(args) > 2 else kwargs.get("axes")
        if given is None:
            s = args[1] if len(args) > 1 else kwargs.get("s")
            count = last if last is not None else (len(s) if s is not None else a.ndim)
            return list(range(a.ndim - count, a.ndim))
        return [ax % a.ndim for ax in given]

    return axes


_ADAPT = {
    "take": _take,
    "power": _power,
    "pow": _power,
    "insert": _flat_if_no_axis(3),
    "delete": _flat_if_no_axis(2),
    "append": _flat_if_no_axis(2, ravel=(0, 1)),
    "repeat": _flat_if_no_axis(2),
    "linalg.cholesky": _cholesky,
    "linalg.solve": _solve,
    "linalg.inv": _inv,
    "linalg.svd": _svd,
    "linalg.qr": _qr,
    "linalg.norm": lambda t, args, kwargs: ((_float(args[0]), *args[1:]), kwargs),
    "reshape": lambda t, args, kwargs: _reshape(t, args, kwargs),
    **{f"fft.{n}": _fft(_axis_1d) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")},
    **{f"fft.{n}": _fft(_axes_nd(2)) for n in ("fft2", "ifft2", "rfft2", "irfft2")},
    **{f"fft.{n}": _fft(_axes_nd(None)) for n in ("fftn", "ifftn", "rfftn", "irfftn")},
}


def _method(name: str) -> Any:
    if name == "copy":
        return lambda a, *args, **kwargs: a.copy()
    if name == "astype":
        return lambda a, dtype, *args, **kwargs: a.astype(dtype) if kwargs.get("copy", True) or a.dtype != dtype else a
    # ascontiguousarray, asfortranarray: a Dask array has no memory layout; NumPy makes a 0-d one 1-d.
    return lambda a, *args, **kwargs: (a if a.ndim else a.reshape(1)) if not kwargs.get("dtype") else \
        a.astype(kwargs["dtype"]).reshape(a.shape or (1,))


# ---- helpers -----------------------------------------------------------------------------------------


def _creation() -> Any:
    return _dask_create


def _arrays(args: tuple, kwargs: dict, kind: type) -> list[Any]:
    found = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, kind):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(x for x in v if isinstance(x, kind))
    return found


def _dtype_of(x: Any) -> np.dtype:
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _check_writeable(a: Any) -> None:
    """Writes into the Dask snapshot of a read-only host array raise, as NumPy's do."""
    if getattr(a, _READ_ONLY, False):
        raise ValueError("assignment destination is read-only")


def _indexed(a: Any, key: Any) -> Any:
    """``a[key]``; a full integer index gives a (device) scalar, as NumPy's does."""
    result = _known_shape(a[key])
    keys = key if isinstance(key, tuple) else (key,)
    if result.ndim == 0 and len(keys) == a.ndim and all(isinstance(k, (int, np.integer)) for k in keys):
        return device_scalar(result)
    return result


def _dask_key(key: Any) -> Any:
    """Index lists become arrays (Dask reads a list of slices differently); integer index
    arrays held by Dask are computed (see ``_concrete``)."""
    if isinstance(key, list):
        return np.asarray(key)
    if isinstance(key, tuple):
        return tuple(np.asarray(k) if isinstance(k, list) else _concrete(k) for k in key)
    return _concrete(key)


def _computed_mask(index: Any) -> Any:
    """A boolean mask held by Dask, computed (the count of its True elements is then known)."""
    if type(index).__module__.startswith("dask.array") and getattr(index, "dtype", None) == np.bool_:
        return _host_array(index.compute())
    return index


def _concrete(index: Any) -> Any:
    """An integer index array held by Dask, computed: Dask checks the range of NumPy indices
    at once, as NumPy does, but reads out-of-range indices of a lazy index array as other
    elements. Boolean masks stay lazy (their shape is checked at once)."""
    if type(index).__module__.startswith("dask.array") and getattr(index, "dtype", None) is not None \
            and index.dtype.kind in "iu":
        return _host_array(index.compute())
    return index


def _host_name() -> str:
    """A graph name for a host array's snapshot: unique per call (the array may change later)."""
    import uuid

    return f"from-host-{uuid.uuid4().hex}"


def _host_array(value: Any) -> np.ndarray:
    if type(value).__module__.startswith("cupy"):
        return value.get()
    return np.asarray(value)


def _known_shape(result: Any) -> Any:
    """Chunk sizes computed where they depend on values (boolean masks, nonzero, unique)."""
    if hasattr(result, "chunks") and any(math.isnan(c) for dim in result.chunks for c in dim):
        result.compute_chunk_sizes()
    return result


def _match(da: Any, result: Any, want: Any, scalar_0d: bool) -> Any:
    """NumPy's dtypes; results NumPy returns as scalars become device scalars (0-d, lazy).
    Without ``want`` (NumPy's description), Dask's dtypes stand and a 0-d result of a function
    (not of a view or copy) is a scalar, as NumPy's functions return."""
    if want is None:
        if isinstance(result, (tuple, list)):
            return type(result)(_match(da, r, None, scalar_0d) for r in result)
        if isinstance(result, da.Array):
            result = _known_shape(result)
            return device_scalar(result) if scalar_0d and result.ndim == 0 else result
        return result

    items = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(items) != len(want.dtypes):
        raise Unsupported("Dask returned a different number of outputs than NumPy")
    for i, (item, dtype, scalar) in enumerate(zip(items, want.dtypes, want.scalars, strict=True)):
        if isinstance(item, box.Wrapper):  # a device scalar made here
            item = item._engine_array
        if not isinstance(item, da.Array):
            item = da.from_array(np.asarray(item), chunks=-1)
        item = _known_shape(item)
        if item.dtype != dtype:
            item = item.astype(dtype)
        items[i] = device_scalar(item) if scalar and item.ndim == 0 else item
    if want.container is None:
        return items[0]
    if want.container is tuple:
        return tuple(items)
    return want.container(*items)


registry.complete("dask", DaskTarget, dtypes=dtypes_of_kinds(_KINDS), counterparts=_ALIASES)
