"""Every op of the NumPy catalog, run through ``dispatch`` on each backend, against plain NumPy.

Ops are grouped in families (ufuncs by arity, reductions, linalg, fft, shapes, sorting,
creation); a family's maker turns a case's operands into the calls to compare, and an op
that needs special arguments has one line in ``OPS``. Cases (``cases.py``): every dtype on a
contiguous array, every layout on float64, special values on a few float dtypes, and a case
of bad input that must raise NumPy's exception type.

For every call: the result equals NumPy's (``assert_same``), the arguments afterwards equal
NumPy's (inputs untouched, ``out=`` and in-place writes made), and on a forced backend the
trace shows where it ran: natively, or on NumPy with the reason recorded. The counts per
backend are printed at the end of the run; ``test_torch_cpu_native_floor`` pins the ops that
must run natively on torch-cpu.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy
import pytest
from cases import DTYPES, NUMERIC, REAL, Case, case_groups, make
from conftest import BACKENDS, backend_param, backend_params, record_run, require
from helpers import Outcomes, assert_same, host, on_backend
from xfails import lookup

import dispatch
from converters.numpy_ops import NUMPY_CATALOG
from dispatch.base.ops import op_named

np = numpy  # the reference: plain NumPy

Call = tuple[tuple, dict]


def C(*args: Any, **kwargs: Any) -> Call:
    """One call's arguments."""
    return args, kwargs


class In:
    """A case's operands: ``x(i)`` is the i-th array (host NumPy) in the case's dtype and layout."""

    def __init__(self, case: Case, kind: str) -> None:
        self.case, self.kind = case, kind
        self.dtype, self.layout = case.dtype, case.layout

    def __call__(self, i: int = 0, kind: str | None = None) -> numpy.ndarray:
        return make(self.dtype, self.layout, kind or self.kind, i)

    def like(self, dtype: str, i: int = 0) -> numpy.ndarray:
        """The i-th operand in this layout but another dtype."""
        return make(dtype, self.layout, self.kind, i)

    def mask(self, i: int = 2) -> numpy.ndarray:
        return make("bool", self.layout, self.kind, i)

    def index(self, n: int, i: int = 3) -> numpy.ndarray:
        """Valid non-negative indices below ``n``, in this layout."""
        return numpy.abs(make("int64", self.layout, self.kind, i)) % max(n, 1)


@dataclass(frozen=True)
class Spec:
    """How to test one op: the calls for a case, which cases, and how to compare."""

    make: Callable[[In], list[Call]]
    kind: str = "vector"
    dtypes: tuple[str, ...] = DTYPES
    errors: Callable[[In], list[Call]] | None = None
    loose: float = 1.0  # tolerance scale: factorisations and FFTs order their sums differently
    signed_zeros: bool = True
    canon: Callable[[Any, tuple, dict], Any] | None = None  # a canonical form, where results are not unique
    values: bool = True  # False: results whose values are undefined (empty): types, dtypes, shapes only
    seeded: bool = False  # draws from NumPy's global stream: both sides start from one seed
    contig_only: bool = False  # creation functions and draws: no array layouts to vary

    def groups(self) -> dict[str, list[Case]]:
        return case_groups(self.dtypes, self.kind, self.errors is not None, self.contig_only)


# ---- makers: one per family ---------------------------------------------------------------------------


def f1(**kw: Any) -> Callable[[In], list[Call]]:
    return lambda x: [C(x(), **kw)]


def f2(**kw: Any) -> Callable[[In], list[Call]]:
    return lambda x: [C(x(0), x(1), **kw)]


def seq(**kw: Any) -> Callable[[In], list[Call]]:
    """Functions of a sequence of arrays (concatenate, stack...)."""
    return lambda x: [C([x(0), x(1)], **kw)]


def _axes(x: numpy.ndarray) -> list[dict]:
    if x.ndim == 0:
        return [{}]
    if x.ndim == 1:
        return [{}, {"axis": 0}, {"axis": -1, "keepdims": True}]
    return [{}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)}]


def reduction(keepdims: bool = True, multi_axis: bool = True, **kw: Any) -> Callable[[In], list[Call]]:
    def calls(x: In) -> list[Call]:
        a = x()
        out = []
        for axes in _axes(a):
            if not keepdims:
                axes = {k: v for k, v in axes.items() if k != "keepdims"}
            if not multi_axis and isinstance(axes.get("axis"), tuple):
                continue
            out.append(C(a, **axes, **kw))
        return out

    return calls


def bad_axis(**kw: Any) -> Callable[[In], list[Call]]:
    return lambda x: [C(x(), axis=5, **kw)]


def scan(**kw: Any) -> Callable[[In], list[Call]]:
    return lambda x: [C(x(), **kw), *([C(x(), axis=0, **kw)] if x().ndim else [])]


def unary_ufunc(ufunc: numpy.ufunc) -> Spec:
    def calls(x: In) -> list[Call]:
        a = x()
        out = [C(a)]
        if x.layout == "contig":  # out= into an array of the result dtype
            try:
                dtypes = ufunc.resolve_dtypes((a.dtype, *([None] * ufunc.nout)))
            except Exception:
                return out
            if ufunc.nout == 1:
                out.append(C(a, out=numpy.zeros(a.shape, dtypes[1])))
        return out

    return Spec(calls, errors=lambda x: [C(x(), out=numpy.zeros(2, x().dtype))] if ufunc.nout == 1 else [])


def _scalar_for(dtype: str) -> Any:
    kind = numpy.dtype(dtype).kind
    return {"b": True, "i": 3, "u": 3, "f": 2.5, "c": 1.5 - 0.5j}[kind]


def binary_ufunc(ufunc: numpy.ufunc) -> Spec:
    def calls(x: In) -> list[Call]:
        out = [C(x(0), x(1))]
        if x.layout == "contig":  # NEP 50: Python scalars are weak
            s = _scalar_for(x.dtype)
            out += [C(x(0), s), C(s, x(0)), C(x(0), 2)]
        if x.layout == "strided":
            out.append(C(x(0), x(1, "vector")[::-1]))
        return out

    return Spec(calls, errors=lambda x: [C(x(0), x(1)[:4])])


def nonsquare(x: In) -> list[Call]:
    return [C(x(0, "vector")), C(x(0, "matrix"))]


def square(fn: Callable[[In], list[Call]] | None = None, **kw: Any) -> Spec:
    """Linear algebra on square matrices (and stacks of them)."""
    errors = kw.pop("errors", lambda x: [C(x(0, "vector"))])
    # The sign of a zero out of a factorisation depends on its order of operations.
    return Spec(fn or f1(), kind="square", dtypes=kw.pop("dtypes", NUMERIC), errors=errors,
                loose=kw.pop("loose", 1e3), signed_zeros=False, **kw)


def first3(a: numpy.ndarray) -> numpy.ndarray:
    """The first three elements along the last axis (cross products, short divisors)."""
    return a[..., :3] if a.ndim else a


def vec(x: In) -> numpy.ndarray:
    """A vector (or stack of them) matching a square operand: its row sums."""
    return x(1).sum(axis=-1, dtype=x(1).dtype) if x(1).ndim >= 2 else x(1)


def same_twice(x: In) -> Call:
    a = x()
    return C(a, a)


def iterated(result: Any, args: tuple, kwargs: dict) -> Any:
    """The values ``nested_iters`` visits, in order."""
    outer, inner = result
    return numpy.array([[inner.value.item() for _ in inner] for _ in outer])


def rhs(x: In) -> numpy.ndarray:
    """A right-hand side for a square operand: its first column(s)."""
    a = x(1)
    return a[..., :, :2] if a.ndim >= 2 else a


def _spd(x: In) -> numpy.ndarray:
    a = x()
    if a.ndim < 2:
        return a
    return a @ numpy.swapaxes(a, -1, -2).conj() + 4 * numpy.eye(a.shape[-1], dtype=a.dtype) if a.dtype.kind != "b" \
        else a


def _sym(x: In) -> numpy.ndarray:
    a = x()
    return (a + numpy.swapaxes(a, -1, -2).conj()) if a.ndim >= 2 and a.dtype.kind != "b" else a


def fft1(**kw: Any) -> Spec:
    return Spec(lambda x: [C(x(), **kw), *([C(x(), n=5, **kw), C(x(), axis=0, norm="ortho", **kw)]
                                            if x().ndim >= 1 and x().size else [])],
                dtypes=NUMERIC, loose=1e3, signed_zeros=False,  # zeros' signs depend on the butterflies
                errors=lambda x: [C(x(), axis=5, **kw), C(x(), n=0, **kw)])


def fftn(**kw: Any) -> Spec:
    return Spec(lambda x: [C(x(), **kw), C(x(), axes=(0,), norm="forward", **kw), C(x(), s=(3, 2), axes=(0, 1))],
                kind="matrix", dtypes=NUMERIC, loose=1e3, signed_zeros=False,
                errors=lambda x: [C(x(), axes=(0, 5), **kw)])


def creation(fn: Callable[[str], list[Call]]) -> Spec:
    """Functions that take a shape and a dtype, not arrays: only the contiguous cases."""
    return Spec(lambda x: fn(x.dtype), dtypes=DTYPES, contig_only=True)


def seeded(fn: Callable[[In], list[Call]]) -> Spec:
    """A draw from NumPy's global stream (both sides are seeded alike): float64 cases only."""
    return Spec(fn, dtypes=("float64",), seeded=True, contig_only=True)


def pos(x: In, i: int = 0) -> numpy.ndarray:
    """Positive float parameters for distributions."""
    return numpy.abs(x.like("float64", i)) + 0.5


def sorted_values(result: Any, args: tuple, kwargs: dict) -> Any:
    """``partition``-like results are unique only as multisets with the kth element in place."""
    r = host(result)
    return numpy.sort(r, axis=-1) if isinstance(r, numpy.ndarray) and r.ndim else r


def taken_values(result: Any, args: tuple, kwargs: dict) -> Any:
    """Index results that are unique only up to ties: the values they pick."""
    r, a = host(result), host(args[0])
    if kwargs.get("axis", -1) is None:
        a = a.reshape(-1)
    if not isinstance(r, numpy.ndarray) or r.ndim == 0 or a.ndim == 0:
        return r
    return numpy.sort(numpy.take_along_axis(a, r, axis=-1), axis=-1)


def unless_stable(canon: Callable[[Any, tuple, dict], Any]) -> Callable[[Any, tuple, dict], Any]:
    """NumPy's default sort is not stable (a SIMD quicksort on x86): ties, and -0.0 against 0.0,
    may come in any order. Stable sorts compare exactly."""

    def apply(result: Any, args: tuple, kwargs: dict) -> Any:
        if kwargs.get("kind") == "stable" or kwargs.get("stable"):
            return host(result)
        return canon(result, args, kwargs)

    return apply


def reconstruct_svd(result: Any, args: tuple, kwargs: dict) -> Any:
    """SVD vectors are unique up to sign (and rotation for repeated singular values)."""
    if not isinstance(result, tuple):
        return host(result)
    u, s, vh = (host(r) for r in result)
    k = s.shape[-1]
    return (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], s


def reconstruct_eigh(result: Any, args: tuple, kwargs: dict) -> Any:
    w, v = (host(r) for r in result)
    return w, (v * w[..., None, :]) @ numpy.swapaxes(v, -1, -2).conj()


def reconstruct_eig(result: Any, args: tuple, kwargs: dict) -> Any:
    w, v = (host(r) for r in result)
    return _sorted_rows(w), (v * w[..., None, :]) @ numpy.linalg.inv(v)


def reconstruct_qr(result: Any, args: tuple, kwargs: dict) -> Any:
    if not isinstance(result, tuple):
        return numpy.abs(host(result))
    q, r = (host(v) for v in result)
    return q @ r, numpy.abs(r)


def sort_eigvals(result: Any, args: tuple, kwargs: dict) -> Any:
    return _sorted_rows(host(result))


def _sorted_rows(w: numpy.ndarray) -> numpy.ndarray:
    """Eigenvalues or roots, each stack's sorted (their order is not unique)."""
    return numpy.sort_complex(w.reshape(-1, w.shape[-1])) if w.ndim and w.size else w


# ---- the op table: family default, or one line per op that needs its own arguments ---------------------

RED = Spec(reduction(), errors=bad_axis())
RED_NO_KEEP = Spec(reduction(keepdims=False), errors=bad_axis())
VIEW = Spec(f1())
MATRIX_VIEW = Spec(f1(), kind="matrix")

OPS: dict[str, Spec] = {
    # element-wise functions that are not ufuncs
    "angle": Spec(f1()),
    "around": Spec(lambda x: [C(x()), C(x(), 1)]),
    "round": Spec(lambda x: [C(x()), C(x(), 1), C(x(), -1)]),
    "clip": Spec(lambda x: [C(x(), -1, 2), C(x(), None, 1), C(x(), x(1), x(1) + 1)],
                 errors=lambda x: [C(x(), x(1)[:3], 2)]),
    "fix": Spec(f1()),
    "i0": Spec(f1()),
    "imag": VIEW, "real": VIEW,
    "iscomplex": VIEW, "isreal": VIEW, "isneginf": VIEW, "isposinf": VIEW,
    "isclose": Spec(lambda x: [C(x(0), x(1)), C(x(0), x(0), equal_nan=True)]),
    "nan_to_num": Spec(lambda x: [C(x()), C(x(), nan=1.0, posinf=9.0)]),
    "real_if_close": VIEW,
    "sinc": Spec(f1()),
    "where": Spec(lambda x: [C(x.mask(), x(0), x(1)), C(x.mask()), C(x.mask(), x(0), 0)],
                  errors=lambda x: [C(x.mask(), x(0))]),
    "select": Spec(lambda x: [C([x.mask(), ~x.mask()], [x(0), x(1)], default=0)]),
    "choose": Spec(lambda x: [C(x.index(2), [x(0), x(1)])], errors=lambda x: [C(x.index(2) + 5, [x(0), x(1)])]),
    "piecewise": Spec(lambda x: [C(x(), [x.mask()], [lambda v: v * 2, 0])]),
    "unwrap": Spec(f1(), dtypes=REAL),
    "ravel_multi_index": Spec(lambda x: [C((x.index(3), x.index(4, 4)), (3, 4))],
                              errors=lambda x: [C((x.index(3) + 3, x.index(4)), (3, 4))]),
    "unravel_index": Spec(lambda x: [C(x.index(12), (3, 4))], errors=lambda x: [C(x.index(12) + 12, (3, 4))]),
    "packbits": Spec(lambda x: [C(x()), C(x(), bitorder="little")]),
    "unpackbits": Spec(lambda x: [C(x()), *([C(x(), axis=0)] if x().ndim else [])]),
    "outer": Spec(f2()), "linalg.outer": Spec(f2()),
    "kron": Spec(f2()),
    "cross": Spec(lambda x: [C(first3(x(0)), first3(x(1)))], errors=lambda x: [C(x(0), x(1))]),
    "linalg.cross": Spec(lambda x: [C(first3(x(0)), first3(x(1)))], errors=lambda x: [C(x(0), x(1))]),
    "diff": Spec(lambda x: [C(x()), C(x(), n=2), C(x(), prepend=0)], errors=bad_axis()),
    "ediff1d": Spec(f1()),
    "gradient": Spec(lambda x: [C(x()), *([C(x(), axis=0)] if x().ndim else [])]),
    "polyadd": Spec(f2()), "polysub": Spec(f2()), "polyval": Spec(f2()), "polyder": Spec(f1()),
    "polyint": Spec(f1()),
    # products
    "matmul": square(f2(), errors=lambda x: [C(x(0), x(0, "matrix"))]),
    "linalg.matmul": square(f2(), errors=lambda x: [C(x(0), x(0, "matrix"))]),
    "matvec": square(lambda x: [C(x(0), vec(x))], errors=lambda x: [C(x(0), x(0, "vector"))]),
    "vecmat": square(lambda x: [C(vec(x), x(0))], errors=lambda x: [C(x(0, "vector"), x(0))]),
    "vecdot": Spec(f2(), errors=lambda x: [C(x(0), x(1)[:3])]),
    "linalg.vecdot": Spec(f2(), errors=lambda x: [C(x(0), x(1)[:3])]),
    "dot": square(lambda x: [C(x(0), x(1)), C(x(0), vec(x)), C(x(0), 2)], errors=lambda x: [
        C(x(0), x(0, "matrix"))]),
    "inner": Spec(f2(), errors=lambda x: [C(x(0), x(1)[:3])]),
    "vdot": Spec(f2(), errors=lambda x: [C(x(0), x(1)[:3])]),
    "tensordot": square(lambda x: [C(x(0), x(1)), C(x(0), x(1), axes=1)]),
    "linalg.tensordot": square(lambda x: [C(x(0), x(1)), C(x(0), x(1), axes=1)]),
    "einsum": square(lambda x: [C("...ij,...jk->...ik", x(0), x(1)), C("...ii->...", x(0))],
                     errors=lambda x: [C("ij,jk->ik", x(0), x(0, "vector"))]),
    "corrcoef": Spec(f1(), kind="matrix", loose=1e3), "cov": Spec(f1(), kind="matrix", loose=1e3),
    "convolve": Spec(f2()), "correlate": Spec(f2()),
    "poly": Spec(f1(), loose=1e3), "polymul": Spec(f2()),
    "polydiv": Spec(lambda x: [C(x(0), first3(x(1)) + 7)], dtypes=NUMERIC, loose=1e3),
    "linalg.matrix_power": square(lambda x: [C(x(), 3), C(x(), 0), C(x(), -1)]),
    "linalg.multi_dot": square(lambda x: [C([x(0), x(1), x(2)])], errors=lambda x: [C([x(0), x(0, "matrix")])]),
    # reductions
    **dict.fromkeys(["all", "any", "amax", "amin", "max", "min", "nanmax", "nanmin", "sum", "prod", "nansum",
                     "nanprod", "mean", "nanmean", "std", "var", "nanstd", "nanvar", "ptp", "count_nonzero"], RED),
    **dict.fromkeys(["cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod"],
                    Spec(scan(), errors=bad_axis())),
    "argmax": RED_NO_KEEP, "argmin": RED_NO_KEEP, "nanargmax": RED_NO_KEEP, "nanargmin": RED_NO_KEEP,
    "average": Spec(lambda x: [C(x()), *([C(x(), axis=0, weights=numpy.abs(x(1)[..., :x().shape[0]].T).T + 1)]
                                         if x().ndim and x().shape[0] else [])], errors=bad_axis()),
    "trace": Spec(f1(), kind="matrix", errors=lambda x: [C(x(0, "vector"))]),
    "linalg.trace": Spec(f1(), kind="matrix", errors=lambda x: [C(x(0, "vector"))]),
    "trapezoid": Spec(lambda x: [C(x()), C(x(), dx=0.5)], errors=bad_axis()),
    "bincount": Spec(lambda x: [C(x.index(5).reshape(-1)), C(x.index(5).reshape(-1), minlength=9)],
                     errors=lambda x: [C(x.index(5).reshape(-1) - 9)]),
    "histogram_bin_edges": Spec(lambda x: [C(x(), bins=4)], dtypes=REAL[1:]),
    "array_equal": Spec(lambda x: [C(x(0), x(1)), C(x(0), x(0)), C(x(0), x(0), equal_nan=True)]),
    "array_equiv": Spec(lambda x: [C(x(0), x(1)), C(x(0), x(0))]),
    "allclose": Spec(lambda x: [C(x(0), x(1)), C(x(0), x(0), equal_nan=True)]),
    "linalg.norm": square(lambda x: [C(x()), C(x(), ord=1), C(x(), "fro"), C(x(), axis=-1), C(x(), 2, axis=-1),
                                     C(x(), keepdims=True), C(x(), axis=-1, keepdims=True)],
                          errors=lambda x: [C(x(), ord=3)]),
    "linalg.matrix_norm": square(lambda x: [C(x()), C(x(), ord=1), C(x(), ord="nuc")]),
    "linalg.vector_norm": Spec(lambda x: [C(x()), C(x(), ord=1), C(x(), ord=numpy.inf)], dtypes=NUMERIC,
                               loose=1e3),
    # views and shapes
    **dict.fromkeys(["atleast_1d", "atleast_2d", "atleast_3d", "flip", "flipud", "ravel", "transpose",
                     "permute_dims", "squeeze", "copy", "ascontiguousarray", "asfortranarray", "argwhere",
                     "flatnonzero", "nonzero", "fft.fftshift", "fft.ifftshift", "unstack", "trim_zeros",
                     "from_dlpack", "array", "asarray", "asanyarray", "asarray_chkfinite", "diagflat"], VIEW),
    **dict.fromkeys(["fliplr", "diagonal", "matrix_transpose", "linalg.matrix_transpose", "linalg.diagonal",
                     "rot90", "tril", "triu", "vsplit", "hsplit"], MATRIX_VIEW),
    "broadcast_arrays": Spec(f2(), errors=lambda x: [C(x(0), x(1)[:3])]),
    "broadcast_to": Spec(lambda x: [C(x(), (2, *x().shape))], errors=lambda x: [C(x(), (5,))]),
    "expand_dims": Spec(lambda x: [C(x(), 0), C(x(), -1)], errors=lambda x: [C(x(), 5)]),
    "moveaxis": Spec(lambda x: [C(x(), 0, -1)], kind="matrix", errors=lambda x: [C(x(), 0, 5)]),
    "rollaxis": Spec(lambda x: [C(x(), 1)], kind="matrix", errors=lambda x: [C(x(), 5)]),
    "swapaxes": Spec(lambda x: [C(x(), 0, -1)], kind="matrix", errors=lambda x: [C(x(), 0, 5)]),
    "reshape": Spec(lambda x: [C(x(), -1), C(x(), (1, -1)), C(x(), -1, order="F")],
                    errors=lambda x: [C(x(), (5, 5))]),
    "array_split": Spec(lambda x: [C(x(), 3), C(x(), [1, 2])]),
    "split": Spec(lambda x: [C(x(), 1), C(x(), [1, 2])], errors=lambda x: [C(x(), 3)]),
    "dsplit": Spec(lambda x: [C(x()[..., None], 1)], kind="matrix", errors=lambda x: [C(x(), 1)]),
    "vstack": Spec(seq()), "row_stack": Spec(seq()), "hstack": Spec(seq()), "dstack": Spec(seq()),
    "column_stack": Spec(seq()),
    "stack": Spec(lambda x: [C([x(0), x(0)]), C([x(0), x(0)], axis=-1)], errors=lambda x: [C([x(0), x(0)[:3]])]),
    "concatenate": Spec(lambda x: [C([x(0), x(1)]), C([x(0), x(1)], axis=None)],
                        errors=lambda x: [C([x(0), x(0, "matrix")])]),
    "concat": Spec(lambda x: [C([x(0), x(1)]), C([x(0), x(1)], axis=None)],
                   errors=lambda x: [C([x(0), x(0, "matrix")])]),
    "block": Spec(lambda x: [C([x(0), x(1)])]),
    "append": Spec(lambda x: [C(x(0), x(1)), C(x(0), 5)]),
    "astype": Spec(lambda x: [C(x(), "float32"), C(x(), "int16"), C(x(), "complex128"), C(x(), "bool")]),
    "compress": Spec(lambda x: [C([True, False, True], x()), C([True, False], x(), axis=0)]),
    "extract": Spec(lambda x: [C(x.mask(), x())]),
    "place": Spec(lambda x: [C(x(), x.mask(), [7])]),
    "putmask": Spec(lambda x: [C(x(), x.mask(), x(1))]),
    "put": Spec(lambda x: [C(x(), [0, 2], [9, 8])], errors=lambda x: [C(x(), [99], [1])]),
    "put_along_axis": Spec(lambda x: [C(x(), numpy.argsort(x(), axis=-1)[..., :1], 9, axis=-1)],
                           dtypes=REAL, kind="matrix"),
    "copyto": Spec(lambda x: [C(x(0), x(1)), C(x(0), 7), C(x(0), x(1), where=x.mask())],
                   errors=lambda x: [C(x(0), x(1)[:3])]),
    "fill_diagonal": Spec(lambda x: [C(x(), 5)], kind="matrix"),
    "delete": Spec(lambda x: [C(x(), 1), C(x(), [0, 1], axis=0)], kind="matrix"),
    "insert": Spec(lambda x: [C(x(), 1, 5), C(x(), 1, 5, axis=0)], kind="matrix"),
    "pad": Spec(lambda x: [C(x(), 1), C(x(), (1, 2), mode="edge")]),
    "repeat": Spec(lambda x: [C(x(), 2), C(x(), 2, axis=0)], errors=bad_axis(repeats=2)),
    "resize": Spec(lambda x: [C(x(), (3, 5))]),
    "roll": Spec(lambda x: [C(x(), 2), C(x(), -1, axis=0)]),
    "take": Spec(lambda x: [C(x(), [0, 2, -1]), C(x(), [0, -1], axis=0)], errors=lambda x: [C(x(), [99])]),
    "take_along_axis": Spec(lambda x: [C(x(), numpy.argsort(x(), axis=-1), axis=-1)], dtypes=REAL),
    "tile": Spec(lambda x: [C(x(), 2), C(x(), (2, 1))]),
    "diag": Spec(lambda x: [C(x()), C(x(), 1)]),
    "require": Spec(lambda x: [C(x(), requirements="F"), C(x(), "float32")]),
    # creation
    "arange": creation(lambda dt: [C(7, dtype=dt)] if dt != "bool" else [C(2, dtype=dt)]),
    **{n: creation(lambda dt, n=n: [C((3, 2), dtype=dt)]) for n in ("zeros", "ones")},
    "empty": Spec(lambda x: [C((3, 2), dtype=x.dtype)], contig_only=True, values=False),
    "full": creation(lambda dt: [C((3, 2), 1, dtype=dt)]),
    "eye": creation(lambda dt: [C(3, dtype=dt), C(3, 4, k=1, dtype=dt)]),
    "identity": creation(lambda dt: [C(3, dtype=dt)]),
    "tri": creation(lambda dt: [C(3, 4, dtype=dt)]),
    "linspace": Spec(lambda x: [C(0, 1, 5), C(x(0)[..., :2], x(1)[..., :2] + 3, 4)], dtypes=REAL[1:],
                     contig_only=True),
    "logspace": Spec(lambda x: [C(0, 1, 5), C(x(0)[..., :2], 2, 4)], dtypes=REAL[1:], contig_only=True),
    "geomspace": Spec(lambda x: [C(1, 1000, 4), C(numpy.abs(x(0)) + 1, 100, 4)], dtypes=REAL[1:],
                      contig_only=True),
    **{n: Spec(lambda x: [C(x()), C(x(), dtype="float32")]) for n in ("zeros_like", "ones_like")},
    "empty_like": Spec(lambda x: [C(x()), C(x(), dtype="float32")], values=False),
    "full_like": Spec(lambda x: [C(x(), 1), C(x(), 2, dtype="float32")]),
    **{n: creation(lambda dt: [C(5), C(1)]) for n in ("bartlett", "blackman", "hamming", "hanning")},
    "kaiser": creation(lambda dt: [C(5, 14.0)]),
    "diag_indices": creation(lambda dt: [C(3), C(3, 3)]),
    "diag_indices_from": Spec(f1(), kind="square", errors=lambda x: [C(x(0, "matrix"))]),
    "tril_indices": creation(lambda dt: [C(3), C(3, 1, 4)]),
    "triu_indices": creation(lambda dt: [C(3), C(3, 1, 4)]),
    "tril_indices_from": Spec(f1(), kind="matrix"), "triu_indices_from": Spec(f1(), kind="matrix"),
    "mask_indices": creation(lambda dt: [C(3, numpy.triu)]),
    "indices": creation(lambda dt: [C((2, 3)), C((2, 3), sparse=True)]),
    "ix_": Spec(lambda x: [C(x(0), x(1))]),
    "meshgrid": Spec(lambda x: [C(x(0), x(1)), C(x(0), x(1), indexing="ij")]),
    "vander": Spec(lambda x: [C(x()), C(x(), 3)]),
    "fromfunction": creation(lambda dt: [C(lambda i, j: i + j, (2, 3), dtype=dt)]),
    "fromiter": creation(lambda dt: [C(iter([1, 0, 2]), dtype=dt)]),
    "frombuffer": creation(lambda dt: [C(numpy.ones(4, dtype=dt).tobytes(), dtype=dt)]),
    "fft.fftfreq": creation(lambda dt: [C(7), C(8, 0.5)]), "fft.rfftfreq": creation(lambda dt: [C(7), C(8, 0.5)]),
    # index queries, sets and sorting
    "isin": Spec(lambda x: [C(x(0), x(1)), C(x(0), x(1), invert=True)]),
    "searchsorted": Spec(lambda x: [C(numpy.sort(x(0).reshape(-1)), x(1)), C(numpy.sort(x(0).reshape(-1)), x(1),
                                                                         side="right")], dtypes=REAL),
    "digitize": Spec(lambda x: [C(x(0), numpy.unique(x(1).reshape(-1)))], dtypes=REAL),
    "interp": Spec(lambda x: [C(x(0), [-2.0, 0.0, 3.0], [1.0, 5.0, 2.0])], dtypes=REAL),
    "histogram": Spec(lambda x: [C(x(), bins=4)], dtypes=REAL[1:]),
    "histogram2d": Spec(lambda x: [C(x(0).reshape(-1), x(1).reshape(-1), bins=3)], dtypes=REAL[1:]),
    "histogramdd": Spec(lambda x: [C(x(), bins=2)], kind="matrix", dtypes=REAL[1:]),
    "sort": Spec(lambda x: [C(x()), C(x(), axis=None), C(x(), kind="stable"), *([C(x(), axis=0)] if x().ndim else [])],
                 errors=bad_axis(), canon=unless_stable(lambda r, a, k: host(r) + 0 if host(r).dtype.kind == "f"
                                                        else host(r))),
    "argsort": Spec(lambda x: [C(x()), C(x(), kind="stable"), C(x(), axis=None), C(x(), stable=True)],
                    errors=bad_axis(), canon=unless_stable(taken_values)),
    "sort_complex": Spec(f1()),
    "lexsort": Spec(lambda x: [C([x(0), x(1)])], kind="matrix"),
    "partition": Spec(lambda x: [C(x(), 1)], canon=sorted_values, errors=lambda x: [C(x(), 99)]),
    "argpartition": Spec(lambda x: [C(x(), 1)], canon=taken_values, errors=lambda x: [C(x(), 99)]),
    **dict.fromkeys(["median", "nanmedian"], Spec(reduction(multi_axis=True), errors=bad_axis())),
    **{n: Spec(lambda x: [C(x(), 30), C(x(), [10, 90], axis=0)], dtypes=REAL, errors=lambda x: [C(x(), 130)])
       for n in ("percentile", "nanpercentile")},
    **{n: Spec(lambda x: [C(x(), 0.3), C(x(), [0.1, 0.9], axis=0)], dtypes=REAL, errors=lambda x: [C(x(), 1.3)])
       for n in ("quantile", "nanquantile")},
    **dict.fromkeys(["intersect1d", "setdiff1d", "setxor1d", "union1d"], Spec(f2())),
    "unique": Spec(lambda x: [C(x()), C(x(), return_counts=True), C(x(), return_index=True, return_inverse=True)]),
    **dict.fromkeys(["unique_all", "unique_counts", "unique_inverse", "unique_values"], VIEW),
    # polynomials and roots
    "polyfit": Spec(lambda x: [C(x(0), x(1), 2)], dtypes=REAL[1:], loose=1e3),
    "roots": Spec(f1(), dtypes=NUMERIC, loose=1e5, canon=sort_eigvals),
    # linalg
    "linalg.cholesky": square(lambda x: [C(_spd(x)), C(_spd(x), upper=True)]),
    "linalg.cond": square(lambda x: [C(x()), C(x(), 1)]),
    "linalg.det": square(errors=nonsquare), "linalg.inv": square(errors=nonsquare), "linalg.pinv": square(),
    "linalg.eig": square(canon=reconstruct_eig), "linalg.eigvals": square(canon=sort_eigvals),
    "linalg.eigh": square(lambda x: [C(_sym(x)), C(_sym(x), UPLO="U")], canon=reconstruct_eigh),
    "linalg.eigvalsh": square(lambda x: [C(_sym(x)), C(_sym(x), UPLO="U")]),
    "linalg.lstsq": square(lambda x: [C(x(), vec(x) if x().ndim == 2 else rhs(x), rcond=None)]),
    "linalg.matrix_rank": square(lambda x: [C(x()), C(x(), hermitian=False)], errors=lambda x: [C(x(), tol="a")]),
    "linalg.qr": square(lambda x: [C(x()), C(x(), mode="r"), C(x(), mode="complete")], canon=reconstruct_qr),
    "linalg.slogdet": square(errors=nonsquare), "linalg.svdvals": square(),
    "linalg.solve": square(lambda x: [C(x(), rhs(x)), C(x(), vec(x))],
                           errors=lambda x: [C(x(0, "matrix"), x(1)), C(x(), x(1)[..., :3, :])]),
    "linalg.svd": square(lambda x: [C(x()), C(x(), full_matrices=False), C(x(), compute_uv=False)],
                         canon=reconstruct_svd),
    "linalg.tensorinv": square(lambda x: [C(x(), ind=1)]),
    "linalg.tensorsolve": square(lambda x: [C(x(), vec(x))]),
    # fft
    **{f"fft.{n}": fft1() for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")},
    **{f"fft.{n}": fftn() for n in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn")},
    # host-side queries that take arrays
    **dict.fromkeys(["iscomplexobj", "isrealobj", "isfortran", "isscalar", "iterable", "common_type",
                     "min_scalar_type", "ndim", "shape", "size", "array2string", "array_repr", "array_str",
                     "asmatrix"], Spec(f1(), dtypes=NUMERIC)),
    "result_type": Spec(lambda x: [C(x(0), x(1)), C(x(0), 1.5)]),
    "shares_memory": Spec(lambda x: [C(x(0), x(1)), same_twice(x)]),
    "may_share_memory": Spec(lambda x: [C(x(0), x(1)), same_twice(x)]),
    "einsum_path": Spec(lambda x: [C("ij,jk->ik", x(0), x(1))], kind="square"),
    "apply_along_axis": Spec(lambda x: [C(lambda v: v * 2, 0, x())], kind="matrix"),
    "apply_over_axes": Spec(lambda x: [C(numpy.sum, x(), [0])], kind="matrix"),
    "bmat": Spec(lambda x: [C([[x(0), x(1)]])], kind="matrix"),
    "nested_iters": Spec(lambda x: [C(x(), [[0], [1]])], kind="matrix", canon=iterated),
    "save": Spec(lambda x: [C(_tmpfile(".npy"), x())]),
    "savetxt": Spec(lambda x: [C(_tmpfile(".txt"), x())], kind="matrix", dtypes=REAL),
    "savez": Spec(lambda x: [C(_tmpfile(".npz"), x(0), b=x(1))]),
    "savez_compressed": Spec(lambda x: [C(_tmpfile(".npz"), x(0), b=x(1))]),
    "datetime_as_string": creation(lambda dt: [C(numpy.arange("2024-01", "2024-04", dtype="datetime64[D]"))]),
    "busday_count": creation(lambda dt: [C(numpy.datetime64("2024-01-01"),
                                           numpy.arange("2024-02", "2024-03", dtype="datetime64[W]"))]),
    "busday_offset": creation(lambda dt: [C(numpy.arange("2024-01", "2024-02", dtype="datetime64[W]"), 2,
                                            roll="forward")]),
    "is_busday": creation(lambda dt: [C(numpy.arange("2024-01-01", "2024-01-09", dtype="datetime64[D]"))]),
    # random: NumPy's global stream through dispatch
    "random.choice": seeded(lambda x: [C(x(), 3), C(x(), 4, replace=False), C(5, 2, p=[0.1, 0.2, 0.3, 0.2, 0.2])]),
    "random.permutation": seeded(lambda x: [C(x()), C(6)]),
    "random.shuffle": seeded(lambda x: [C(x())]),
    "random.multinomial": seeded(lambda x: [C(10, [0.2, 0.3, 0.5], size=2)]),
    "random.dirichlet": seeded(lambda x: [C(pos(x)[:3], size=2)]),
    "random.multivariate_normal": seeded(lambda x: [C(x()[:2], [[2.0, 0.5], [0.5, 1.0]], size=3)]),
    "random.bytes": seeded(lambda x: [C(5)]),
    **{f"random.{n}": seeded(lambda x: [C(size=3), C(size=(2, 2))]) for n in (
        "rand", "random", "random_sample", "ranf", "sample", "standard_normal", "standard_cauchy",
        "standard_exponential")},
    "random.rand": seeded(lambda x: [C(3), C(2, 2)]), "random.randn": seeded(lambda x: [C(3), C(2, 2)]),
    "random.randint": seeded(lambda x: [C(5, size=4), C(-3, 9, size=(2, 2))]),
    "random.random_integers": seeded(lambda x: [C(5, size=4)]),
    **{f"random.{n}": seeded(lambda x: [C(pos(x)), C(1.5, size=3)]) for n in (
        "exponential", "chisquare", "poisson", "rayleigh", "standard_gamma", "standard_t", "pareto", "power",
        "weibull")},
    **{f"random.{n}": seeded(lambda x: [C(x(), pos(x, 1)), C(0.5, 2.0, size=3)]) for n in (
        "normal", "gumbel", "laplace", "logistic", "lognormal", "vonmises")},
    **{f"random.{n}": seeded(lambda x: [C(pos(x), pos(x, 1)), C(2.0, 3.0, size=3)]) for n in (
        "beta", "gamma", "f", "wald", "noncentral_chisquare")},
    "random.uniform": seeded(lambda x: [C(x(), x() + 1), C(0, 2, size=3)]),
    "random.triangular": seeded(lambda x: [C(x() - 1, x(), x() + 1), C(0, 1, 2, size=3)]),
    "random.noncentral_f": seeded(lambda x: [C(pos(x), pos(x, 1), pos(x, 2)), C(2.0, 3.0, 1.0, size=3)]),
    "random.binomial": seeded(lambda x: [C(10, 1 / pos(x) / 4), C(5, 0.3, size=3)]),
    "random.negative_binomial": seeded(lambda x: [C(10, 1 / pos(x) / 4), C(5, 0.3, size=3)]),
    "random.geometric": seeded(lambda x: [C(1 / pos(x) / 4), C(0.3, size=3)]),
    "random.logseries": seeded(lambda x: [C(1 / pos(x) / 4), C(0.3, size=3)]),
    "random.zipf": seeded(lambda x: [C(pos(x) + 1.5), C(2.5, size=3)]),
    "random.hypergeometric": seeded(lambda x: [C(10, 5, 4, size=3), C(numpy.arange(5, 12), 5, 4)]),
}

# Catalog ops that take no arrays at all, or that only read or set process state; why each.
NOT_COMPARED = {
    **dict.fromkeys(["base_repr", "binary_repr"], "takes a Python integer"),
    **dict.fromkeys(["format_float_positional", "format_float_scientific"], "takes a Python float"),
    **dict.fromkeys(["broadcast_shapes", "can_cast", "isdtype", "issubdtype", "mintypecode", "promote_types",
                     "typename"], "takes shapes, dtypes or type codes, not arrays"),
    **dict.fromkeys(["datetime_data"], "takes a datetime dtype"),
    **dict.fromkeys(["fromfile", "fromregex", "fromstring", "genfromtxt", "load", "loadtxt"],
                    "reads a file or a string: host I/O, covered by test_array's save/load round trip"),
    **dict.fromkeys(["frompyfunc", "get_include", "get_printoptions", "getbufsize", "geterr", "geterrcall", "info",
                     "printoptions", "set_printoptions", "setbufsize", "seterr", "seterrcall", "show_config",
                     "show_runtime"], "process state or documentation, no arrays"),
    **dict.fromkeys(["random.seed", "random.get_state", "random.set_state", "random.default_rng",
                     "random.get_bit_generator", "random.set_bit_generator"],
                    "stream state: test_array checks dispatch.random reproduces NumPy's streams"),
    **dict.fromkeys([n for n in NUMPY_CATALOG if n.startswith("random.Generator.")],
                    "a Generator's method: test_random_device and test_streams compare its bits with NumPy's"),
}


_TMPDIR = tempfile.mkdtemp(prefix="dispatch-compare-")
atexit.register(shutil.rmtree, _TMPDIR, ignore_errors=True)


def _tmpfile(suffix: str) -> str:
    """One file per suffix in this process's temporary folder, overwritten by each save."""
    return os.path.join(_TMPDIR, f"saved{suffix}")


def _spec(name: str) -> Spec:
    if name in OPS:
        return OPS[name]
    func = _numpy_func(name)
    if isinstance(func, numpy.ufunc) and func.signature is None:
        return unary_ufunc(func) if func.nin == 1 else binary_ufunc(func)
    raise KeyError(name)


def _numpy_func(name: str) -> Any:
    obj: Any = numpy
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _dispatch_func(name: str) -> Any:
    obj: Any = dispatch
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


COMPARED = sorted(n for n in NUMPY_CATALOG if n not in NOT_COMPARED and hasattr(numpy, n.split(".")[0]))
COMPARE_BACKENDS = ("auto", *BACKENDS)  # "auto": routed, untraced: the fast path users get


def _backend_param(backend: str, *values: Any, id: str) -> Any:
    base = backend_param(backend) if backend != "auto" else pytest.param("auto", id="auto")
    return pytest.param(*values, backend, marks=base.marks, id=f"{id}-{backend}")


def _params() -> list[Any]:
    return [_backend_param(backend, name, group, id=f"{name}-{group}")
            for name in COMPARED for group in _spec(name).groups() for backend in COMPARE_BACKENDS]


def test_every_catalog_op_is_compared_or_says_why():
    ufuncs = {n for n in NUMPY_CATALOG if isinstance(getattr(numpy, n, None), numpy.ufunc)}
    missing = [n for n in COMPARED if n not in OPS and n not in ufuncs]
    assert not missing, f"no argument maker: {missing}"
    assert not set(OPS) - set(NUMPY_CATALOG), set(OPS) - set(NUMPY_CATALOG)
    assert not set(OPS) & set(NOT_COMPARED)


# ---- running one case --------------------------------------------------------------------------------


_DEVICES = ("cupy", "torch-cuda", "torch-mps")


def _writes(name: str) -> bool:
    """Whether the op writes into one of its arguments (``copyto``, ``put``...)."""
    try:
        return op_named(name).mutates is not None
    except KeyError:
        return False


def _writable(value: Any, copies: dict) -> Any:
    """Read-only host arrays (a broadcast view) as writable copies, one copy per array."""
    if type(value) is numpy.ndarray and not value.flags.writeable:
        return copies.setdefault(id(value), numpy.array(value))
    if type(value) in (list, tuple):
        return type(value)(_writable(v, copies) for v in value)
    if type(value) is dict:
        return {k: _writable(v, copies) for k, v in value.items()}
    return value


def _to_dispatch(value: Any, backend: str, seen: dict | None = None) -> Any:
    """Host arrays as dispatch arrays on ``backend``; one host array given twice becomes one
    dispatch array (``shares_memory(a, a)``)."""
    seen = {} if seen is None else seen
    if isinstance(value, numpy.ndarray) and type(value) is numpy.ndarray:
        if id(value) not in seen:
            seen[id(value)] = on_backend(value, backend)
        return seen[id(value)]
    if type(value) in (list, tuple):
        return type(value)(_to_dispatch(v, backend, seen) for v in value)
    if type(value) is dict:
        return {k: _to_dispatch(v, backend, seen) for k, v in value.items()}
    return value


def _run(func: Any, args: tuple, kwargs: dict, seeded: bool) -> tuple[Any, BaseException | None]:
    if seeded:
        numpy.random.seed(1234)
    try:
        with warnings.catch_warnings(), numpy.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return func(*args, **kwargs), None
    except Exception as exc:
        return None, exc


@contextlib.contextmanager
def _forced(backend: str):
    if backend == "auto":
        yield None
        return
    with dispatch.using(backend), dispatch.trace() as t:
        yield t


def _arrays_in(value: Any) -> list[Any]:
    if isinstance(value, (numpy.ndarray, dispatch.ndarray)):
        return [value]
    if type(value) in (list, tuple):
        return [a for v in value for a in _arrays_in(v)]
    return []


@pytest.mark.parametrize(("name", "group", "backend"), _params())
def test_op(name: str, group: str, backend: str, request: pytest.FixtureRequest) -> None:
    if backend != "auto":
        require(backend)
    spec = _spec(name)
    outcomes, native = Outcomes(), []
    for case in spec.groups()[group]:
        with outcomes.case(case.id, lookup(name, backend, case.dtype, case.layout)):
            x = In(case, spec.kind)
            make_calls = spec.errors if case.layout == "errors" else spec.make
            native += compare_calls(name, _numpy_func(name), _dispatch_func(name), functools.partial(make_calls, x),
                                    backend, spec, errors=case.layout == "errors")
    if native and backend != "auto":
        record_run(request, backend, name, native)
    outcomes.finish()


def compare_calls(name: str, ref: Any, mine: Any, make_calls: Callable[[], list[Call]], backend: str,
                  spec: Spec, errors: bool = False) -> list[bool]:
    """Run each call through NumPy and through dispatch on ``backend``; assert they agree.

    ``make_calls`` is called twice, so that NumPy and dispatch get equal but separate
    arguments, each in the case's exact layout. Returns, per call, whether it ran natively.
    """
    native = []
    for (ref_args, ref_kwargs), (args, kwargs) in zip(make_calls(), make_calls(), strict=True):
        if backend in _DEVICES and _writes(name):  # a device copy is writable, as numpy.array(x) is
            copies: dict = {}
            ref_args, ref_kwargs = _writable(ref_args, copies), _writable(ref_kwargs, copies)
        expected, expected_exc = _run(ref, ref_args, ref_kwargs, spec.seeded)
        where = f"{name}(*{_short(args)}, **{_short(kwargs)})"
        if errors:
            assert expected_exc is not None, f"the error case {where} does not raise in NumPy"
        seen: dict = {}
        my_args, my_kwargs = _to_dispatch(args, backend, seen), _to_dispatch(kwargs, backend, seen)
        with _forced(backend) as t:
            result, exc = _run(mine, my_args, my_kwargs, spec.seeded)
        if expected_exc is not None:
            assert exc is not None, f"{where}: NumPy raises {type(expected_exc).__name__}, dispatch returned {result!r}"
            assert type(exc) is type(expected_exc), \
                f"{where}: NumPy raises {type(expected_exc).__name__}({expected_exc}), dispatch {exc!r}"
        else:
            if exc is not None:
                raise AssertionError(f"{where}: NumPy returns, dispatch raised {type(exc).__name__}: {exc}") from exc
            _same_identity(result, expected, my_args, my_kwargs, ref_args, ref_kwargs, where)
            if spec.canon is None:
                assert_same(result, expected, loose=spec.loose, signed_zeros=spec.signed_zeros, values=spec.values,
                            path=where)
            else:  # types, dtypes and shapes as they are; values in the canonical form
                assert_same(result, expected, values=False, path=where)
                canon = spec.canon
                assert_same(_wrapped(canon(result, my_args, my_kwargs)), canon(expected, ref_args, ref_kwargs),
                            loose=spec.loose, signed_zeros=False, path=f"{where} (canonical form)")
        _same_arguments(my_args, my_kwargs, ref_args, ref_kwargs, where)
        ran = _ran_natively(t, name, backend, where) if t is not None else None
        if ran is not None:
            native.append(ran)
    return native


def _wrapped(value: Any) -> Any:
    """A canonical form computed on the host, with NumPy arrays as dispatch arrays again."""
    if type(value) is numpy.ndarray:
        return dispatch.asarray(value)
    if type(value) in (list, tuple):
        return type(value)(_wrapped(v) for v in value)
    return value


def _short(value: Any) -> str:
    text = repr(tuple(getattr(a, "shape", a) for a in value) if isinstance(value, tuple) else
                {k: getattr(v, "shape", v) for k, v in value.items()})
    return text if len(text) < 200 else text[:200] + "..."


def _same_arguments(my_args: tuple, my_kwargs: dict, ref_args: tuple, ref_kwargs: dict, where: str) -> None:
    """Afterwards every argument equals NumPy's: untouched inputs, written outputs."""
    mine = _arrays_in(my_args) + _arrays_in(list(my_kwargs.values()))
    ref = _arrays_in(ref_args) + _arrays_in(list(ref_kwargs.values()))
    for i, (m, r) in enumerate(zip(mine, ref, strict=True)):
        assert_same(m if isinstance(m, dispatch.ndarray) else dispatch.asarray(m), r, path=f"{where}: argument {i}")


def _same_identity(result: Any, expected: Any, my_args: tuple, my_kwargs: dict, ref_args: tuple,
                   ref_kwargs: dict, where: str) -> None:
    """A result NumPy returns as one of the arguments (``out=``) is that argument here too."""
    mine = _arrays_in(my_args) + _arrays_in(list(my_kwargs.values()))
    ref = _arrays_in(ref_args) + _arrays_in(list(ref_kwargs.values()))
    for m, r in zip(mine, ref, strict=True):
        if expected is r and type(r) is numpy.ndarray:
            assert result is m, f"{where}: NumPy returns the out= array itself"


def _ran_natively(t: Any, name: str, backend: str, where: str) -> bool | None:
    """Whether the call ran on ``backend``; a call that fell back must say why in the trace.
    ``None`` for a call that raised (no record: NumPy's error is what was compared)."""
    records = [r for r in t.records if r.op == name]
    if not records:
        return None
    first = records[0]
    if first.target == backend:
        return True
    assert first.reason, f"{where}: fell back to {first.target} with no reason"
    if backend != "numpy":
        assert first.reason.startswith("fallback:") or "unavailable" in first.reason, \
            f"{where}: forced {backend} but ran on {first.target}: {first.reason}"
        assert any(op == name for op, _ in t.fallbacks), f"{where}: a fallback not in the trace's fallbacks"
    return False


# ---- the floor: what must run natively on torch-cpu ------------------------------------------------------

TORCH_CPU_NATIVE = (
    "add", "subtract", "multiply", "divide", "true_divide", "negative", "positive", "absolute", "power",
    "floor_divide", "remainder", "maximum", "minimum", "exp", "log", "sqrt", "sin", "cos", "tanh", "square",
    "equal", "less", "greater_equal", "sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax",
    "cumsum", "cumprod", "all", "any", "matmul", "dot", "linalg.solve", "linalg.inv", "linalg.det", "linalg.svd",
    "linalg.qr", "linalg.eigh", "linalg.cholesky", "linalg.norm", "fft.fft", "fft.ifft", "fft.rfft", "fft.irfft",
    "fft.fft2", "fft.fftn",
)


def test_torch_cpu_native_floor():
    """Arithmetic ufuncs, reductions, matmul, basic linalg and FFTs run natively on torch-cpu
    for float64: a suite where they all fell back would prove nothing about torch."""
    require("torch-cpu")
    fell_back = []
    for name in TORCH_CPU_NATIVE:
        spec = _spec(name)
        x = In(Case("float64", "contig"), spec.kind)
        for args, kwargs in spec.make(x)[:1]:
            args = _to_dispatch(args, "torch-cpu")
            with dispatch.using("torch-cpu"), dispatch.trace() as t:
                _dispatch_func(name)(*args, **kwargs)
            if not any(r.op == name and r.target == "torch-cpu" for r in t.records):
                fell_back.append((name, dict(t.fallbacks)))
    assert not fell_back, fell_back


@pytest.mark.parametrize("backend", backend_params(("torch-cpu", "cupy", "torch-cuda")))
def test_integer_grouping_runs_natively(backend):
    """``unique`` with every output and ``lexsort`` of integer keys run on the backend itself,
    as a group-by needs them: they equal NumPy's, the inverse in the input's shape."""
    require(backend)
    rng = numpy.random.default_rng(5)
    ids = rng.integers(-50, 50, size=(40, 25))
    stamps = rng.integers(0, 7, size=1000).astype(numpy.int32)
    calls = [
        ("unique", (ids,), {"return_index": True, "return_inverse": True, "return_counts": True}),
        ("unique", (ids.astype(bool),), {"return_counts": True}),
        ("lexsort", ([stamps, ids.reshape(-1)],), {}),
        ("lexsort", (numpy.stack([stamps, ids.reshape(-1) % 3]),), {}),
        ("lexsort", ([ids, ids % 4],), {"axis": 0}),
    ]
    for name, args, kwargs in calls:
        with dispatch.using(backend), dispatch.trace() as t:
            result = getattr(dispatch, name)(*_to_dispatch(args, backend), **kwargs)
        assert_same(result, getattr(numpy, name)(*args, **kwargs), path=f"{name}{kwargs}")
        assert [r.target for r in t.records if r.op == name] == [backend], (name, kwargs, dict(t.fallbacks))


@pytest.mark.parametrize("backend", backend_params(("torch-cpu", "torch-cuda")))
def test_torch_index_arrays_are_range_checked_with_one_read_back(backend, monkeypatch):
    """On a GPU each read back waits for every kernel queued before it: an index array's two
    bounds come back together; one out of range leaves the call to NumPy, which raises."""
    require(backend)
    import torch

    reads = []
    for name in ("tolist", "item", "__int__", "__index__", "__bool__"):
        real = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _real=real, _name=name:
                            reads.append(_name) or _real(self, *a))
    x = numpy.arange(12.0).reshape(3, 4)
    a, rows = _to_dispatch((x, numpy.array([0, 2, -1, 1])), backend)
    reads.clear()
    with dispatch.using(backend), dispatch.trace() as t:
        got = a[rows]
    assert reads == ["tolist"] and [r.target for r in t.records if r.op == "__getitem__"] == [backend]
    assert_same(got, x[[0, 2, -1, 1]])
    for bad in (numpy.array([0, 3]), numpy.array([-4, 0])):  # past either end
        with dispatch.using(backend), dispatch.trace() as t, pytest.raises(IndexError):
            a[_to_dispatch(bad, backend)]
        assert t.records[-1].target == "numpy", t.records[-1]


# ---- ufunc methods ----------------------------------------------------------------------------------------

BINARY_UFUNCS = sorted(n for n in NUMPY_CATALOG if isinstance(getattr(numpy, n, None), numpy.ufunc)
                       and getattr(numpy, n).nin == 2 and getattr(numpy, n).nout == 1
                       and getattr(numpy, n).signature is None)


METHODS = ("reduce", "accumulate", "outer", "reduceat", "at")


def _method_calls(x: In, method: str) -> list[Call]:
    a, b = x(0), x(1)
    return {
        "reduce": [C(a), C(a.reshape(1, -1), axis=1, keepdims=True)],
        "accumulate": [C(a)],
        "outer": [C(a[:3], b[:4])],
        "reduceat": [C(a, [0, 2, 4])],
        "at": [C(a, [0, 1, 1], b[:3])],
    }[method]


@pytest.mark.parametrize("backend", [*(backend_param(b) for b in BACKENDS), pytest.param("auto", id="auto")])
@pytest.mark.parametrize("name", BINARY_UFUNCS)
def test_ufunc_methods(name: str, backend: str, request: pytest.FixtureRequest) -> None:
    """Every binary ufunc's methods through the ``dispatch.ufunc`` proxy, on int64 and float64."""
    if backend != "auto":
        require(backend)
    outcomes = Outcomes()
    for dtype in ("int64", "float64"):
        x = In(Case(dtype, "contig"), "vector")
        for method in METHODS:
            op = f"{name}.{method}"
            with outcomes.case(f"{op}-{dtype}", lookup(op, backend, dtype, "contig")):
                calls = functools.partial(_method_calls, x, method)
                native = compare_calls(op, getattr(getattr(numpy, name), method),
                                       getattr(_dispatch_func(name), method), calls, backend, Spec(f1()))
                if native and backend != "auto":
                    record_run(request, backend, op, native)
    outcomes.finish()


def test_partition_index_beyond_the_stand_ins_still_runs_on_the_target():
    """The result-dtype oracle runs NumPy on two-element stand-ins: kth=5 must not make every
    target refuse argpartition on a 10-long axis (it ran on NumPy, after a copy, every call)."""
    from dispatch.targets._oracle import expected

    found = expected(numpy.argpartition, (numpy.ones((3, 10)), 5), {"axis": 1}, lambda x: x.dtype)
    assert found is not None and found.dtypes == (numpy.dtype(numpy.intp),)
    found = expected(numpy.partition, (numpy.ones((3, 10), numpy.float32),), {"kth": [2, 5]}, lambda x: x.dtype)
    assert found is not None and found.dtypes == (numpy.dtype(numpy.float32),)
