"""Comparing a workload's results with the NumPy reference, with tolerances by dtype.

Results may arrive as any array type with ``__array__`` (NumPy, a dispatch array, host copies
of CuPy or torch results); everything is converted with ``numpy.asarray`` first. Shapes and
dtypes must match exactly: a backend that returns float32 for a float64 program is wrong even
if the values happen to be close.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy

# Relative tolerances. A valid reordering of a sum (pairwise vs tree reductions, another BLAS,
# cuFFT) moves float64 results by a few ulps times log(n) -- around 1e-14 -- and float32 by
# around 1e-6; these bounds sit well above that and far below a real bug (a 1e-3 error).
RTOL = {
    numpy.dtype(numpy.float64): 1e-9,
    numpy.dtype(numpy.complex128): 1e-9,
    numpy.dtype(numpy.float32): 2e-5,
    numpy.dtype(numpy.complex64): 2e-5,
}


def host(x: Any) -> numpy.ndarray:
    """The result as a NumPy array (0-d for scalars)."""
    return numpy.asarray(x)


def same_keys(result: Mapping[str, Any], reference: Mapping[str, Any]) -> None:
    missing, extra = set(reference) - set(result), set(result) - set(reference)
    if missing or extra:
        raise AssertionError(f"result keys differ: missing {sorted(missing)}, unexpected {sorted(extra)}")


def same_meta(name: str, got: numpy.ndarray, ref: numpy.ndarray) -> None:
    if got.shape != ref.shape:
        raise AssertionError(f"{name}: shape {got.shape}, expected {ref.shape}")
    if got.dtype != ref.dtype:
        raise AssertionError(f"{name}: dtype {got.dtype}, expected {ref.dtype}")


def assert_equal(name: str, got: Any, ref: Any) -> None:
    """Exact equality (integers, labels, indices)."""
    got, ref = host(got), host(ref)
    same_meta(name, got, ref)
    bad = got != ref
    if bad.any():
        first = numpy.unravel_index(int(numpy.argmax(bad)), bad.shape) if bad.ndim else ()
        raise AssertionError(
            f"{name}: {int(bad.sum())} of {ref.size} values differ (first at {first}: got {got[first]!r}, "
            f"expected {ref[first]!r})"
        )


def assert_close(name: str, got: Any, ref: Any, rtol: float | None = None) -> None:
    """``|got - ref| <= rtol * (|ref| + max|ref|)`` element-wise.

    The ``max|ref|`` term is an absolute tolerance at the array's own scale: entries that are
    zero up to cancellation (a residual, a converged shift) may differ by rounding noise of
    the large entries they were computed from.
    """
    got, ref = host(got), host(ref)
    same_meta(name, got, ref)
    if ref.size == 0:
        return
    if rtol is None:
        rtol = RTOL[ref.dtype]
    finite = numpy.isfinite(ref)
    if not numpy.array_equal(finite, numpy.isfinite(got)) or not numpy.array_equal(got[~finite], ref[~finite]):
        raise AssertionError(f"{name}: non-finite values differ")
    g, r = got[finite], ref[finite]
    if r.size == 0:
        return
    err = numpy.abs(g - r)
    bound = rtol * (numpy.abs(r) + numpy.abs(r).max())
    bad = ~(err <= bound)
    if bad.any():
        worst = int(numpy.argmax(numpy.where(bound > 0, err / numpy.where(bound > 0, bound, 1), numpy.inf)))
        raise AssertionError(
            f"{name}: {int(bad.sum())} of {r.size} values differ beyond rtol={rtol:g} (worst: got {g[worst]!r}, "
            f"expected {r[worst]!r}, |diff| {err[worst]:.3g} > {bound[worst]:.3g})"
        )


def assert_topk(
    name: str, got_index: Any, ref_index: Any, got_value: Any, ref_value: Any, rtol: float | None = None
) -> numpy.ndarray:
    """Row-wise top-k results (sorted by value): values must be close; an index may differ
    only where the reference has a near-tie with a neighbouring rank, or at the last rank
    (its competitor, rank k+1, is not returned). Returns the boolean mask of rows where an
    index differed, so that results derived from the indices can be excused there only.
    """
    assert_close(f"{name} values", got_value, ref_value, rtol)
    gi, ri, rv = host(got_index), host(ref_index), host(ref_value)
    same_meta(f"{name} indices", gi, ri)
    if rtol is None:
        rtol = RTOL[rv.dtype]
    tie_tol = 4 * rtol * (numpy.abs(rv) + numpy.abs(rv).max())
    gap = numpy.abs(numpy.diff(rv, axis=1))
    tied = numpy.zeros(rv.shape, dtype=bool)
    tied[:, :-1] |= gap <= tie_tol[:, :-1]
    tied[:, 1:] |= gap <= tie_tol[:, 1:]
    tied[:, -1] = True
    differs = gi != ri
    bad = differs & ~tied
    if bad.any():
        row, col = numpy.argwhere(bad)[0]
        raise AssertionError(
            f"{name} indices: {int(bad.sum())} untied positions differ (first row {row}, rank {col}: "
            f"got {gi[row, col]}, expected {ri[row, col]})"
        )
    return differs.any(axis=1)
