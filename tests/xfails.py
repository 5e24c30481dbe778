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
)


def lookup(op: str, backend: str, dtype: str | None = None, layout: str | None = None) -> XFail | None:
    """The entry for this op, backend and case, if there is one."""
    for entry in XFAILS:
        if entry.matches(op, backend, dtype, layout):
            return entry
    return None
