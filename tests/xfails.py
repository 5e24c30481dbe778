"""The central table of known differences between a backend and NumPy.

One entry per (op, backend or ``"*"``, condition) with the reason. Every comparison test
looks itself up here (``lookup``) and is marked ``xfail(strict=True)`` on a match, so an entry
that stops failing fails the suite until it is removed: the table cannot go stale, and
nothing is skipped silently. Only true backend differences belong here; anything dispatch can
make equal to NumPy is fixed in dispatch instead.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["XFAILS", "XFail", "lookup"]


@dataclass(frozen=True)
class XFail:
    """A known difference: ``op`` on ``backend`` ("*": every backend) differs from NumPy for
    the cases matching ``dtypes`` and ``layouts`` (``None``: any), because of ``reason``."""

    op: str
    backend: str
    reason: str
    dtypes: tuple[str, ...] | None = None
    layouts: tuple[str, ...] | None = None

    def matches(self, op: str, backend: str, dtype: str | None, layout: str | None) -> bool:
        return (self.op == op and self.backend in ("*", backend)
                and (self.dtypes is None or dtype in self.dtypes)
                and (self.layouts is None or layout in self.layouts))


XFAILS: tuple[XFail, ...] = (
    XFail("linalg.slogdet", "torch-cpu", "a NaN inside the matrix: LAPACK's LU in NumPy reports sign 1, torch's "
          "slogdet reports sign 0 (the sign of a NaN determinant is undefined)",
          dtypes=("float32", "float64"), layouts=("special",)),
    # A Dask array is a lazy graph: it has no memory until computed, and then its chunks are
    # joined in C order. What reads or shares memory cannot be NumPy's.
    XFail("isfortran", "dask", "a Dask array has no memory layout: it computes to a C-ordered array, so a "
          "transposed or Fortran-ordered array is not Fortran-contiguous", layouts=("transposed", "fortran")),
    XFail("nested_iters", "dask", "a Dask array has no memory layout: it computes to a C-ordered array, so "
          "iterating in memory order (order='K') visits a reversed array in index order",
          layouts=("reversed",)),
    XFail("view", "dask", "a Dask array is immutable: a write rebinds the written array to a new graph, so an "
          "array sliced from it before keeps the values it had"),
    XFail("__dlpack__", "dask", "a Dask array is lazy: it holds no memory to share through DLPack until it is "
          "computed (dispatch.compute)"),
)


def lookup(op: str, backend: str, dtype: str | None = None, layout: str | None = None) -> XFail | None:
    """The entry for this op, backend and case, if there is one."""
    for entry in XFAILS:
        if entry.matches(op, backend, dtype, layout):
            return entry
    return None
