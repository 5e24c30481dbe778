"""Test inputs: one deterministic array per (dtype, layout, shape kind, operand), so every
backend and NumPy see the same values.

Shape kinds: ``vector`` (1-D, 7 elements, with 2-D layouts of 3×4), ``matrix`` (2-D, 3×4),
``square`` (4×4, diagonally dominant so factorisations are well defined). Layouts cover what
backends get wrong: 0-d, empty, strided, reversed (negative strides), transposed, Fortran
order, broadcast (stride 0, read-only), special values (NaN, ±inf, -0.0), a singular matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DTYPES", "LAYOUTS", "Case", "case_groups", "make"]

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128")
NUMERIC = DTYPES[1:]
FLOATS = ("float16", "float32", "float64", "complex64", "complex128")
REAL = DTYPES[:12]

LAYOUTS = {
    "vector": ("contig", "0d", "empty", "strided", "reversed", "transposed", "fortran", "broadcast", "special"),
    "matrix": ("contig", "empty", "strided", "reversed", "transposed", "fortran", "broadcast", "special"),
    "square": ("contig", "batched", "strided", "transposed", "fortran", "empty", "special", "singular"),
}
# Dtypes that get the special values (NaN, inf, -0.0) besides float64.
SPECIAL_DTYPES = ("float32", "complex128")


@dataclass(frozen=True)
class Case:
    dtype: str
    layout: str

    @property
    def id(self) -> str:
        return f"{self.dtype}-{self.layout}"


def case_groups(dtypes: tuple[str, ...], kind: str, errors: bool, contig_only: bool = False) -> dict[str, list[Case]]:
    """The cases of one op, in groups that run as one test each: ``dtypes`` (every dtype on a
    contiguous array), ``layouts`` (every other layout on float64, or the last of ``dtypes``,
    and special values on a few more float dtypes), ``errors`` (bad input)."""
    groups = {"dtypes": [Case(dt, "contig") for dt in dtypes]}
    main = "float64" if "float64" in dtypes else dtypes[-1]
    if not contig_only:
        groups["layouts"] = [Case(main, layout) for layout in LAYOUTS[kind][1:]
                             if layout != "special" or np.dtype(main).kind in "fc"]
        groups["layouts"] += [Case(dt, "special") for dt in SPECIAL_DTYPES if dt in dtypes]
    if errors:
        groups["errors"] = [Case(main, "errors")]
    return groups


def _values(n: int, i: int) -> np.ndarray:
    """Small integers in [-5, 5], a different sequence per operand ``i``, with repeats and zeros."""
    k = np.arange(n)
    return ((k * (5 + 2 * i) + 3 * i + 2) % 11) - 5


def _typed(v: np.ndarray, dtype: str, i: int) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return v > 0
    if dt.kind == "u":
        return np.abs(v).astype(dt)
    if dt.kind == "i":
        return v.astype(dt)
    if dt.kind == "f":
        return (v * 0.75).astype(dt)
    return (v * 0.75 + 1j * (np.roll(v, 1 + i) * 0.5)).astype(dt)


_SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0, 0.5, np.nan, 3.0, -0.0, 2.0])


def _special(shape: tuple[int, ...], dtype: str, i: int) -> np.ndarray:
    n = int(np.prod(shape))
    v = np.resize(np.roll(_SPECIAL, 3 * i), n)
    if np.dtype(dtype).kind != "c":
        return v.astype(dtype).reshape(shape)
    z = np.empty(n, dtype)  # parts set apart: 1j * inf would put a NaN in the real part
    z.real, z.imag = v, np.resize(np.roll(_SPECIAL, 5 + i), n)
    return z.reshape(shape)


def _square(n: int, dtype: str, i: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    m = _values(int(np.prod(batch, dtype=int)) * n * n, i).reshape(*batch, n, n)
    eye = np.eye(n, dtype=int) * 12  # diagonally dominant: well conditioned, positive diagonal
    a = _typed(m, dtype, i)
    if np.dtype(dtype).kind == "b":
        return a | np.eye(n, dtype=bool)
    return (a + eye.astype(dtype)).astype(dtype)


def make(dtype: str, layout: str, kind: str, i: int = 0) -> np.ndarray:
    """The ``i``-th operand of a case: a host NumPy array in the case's dtype and layout."""
    if kind == "square":
        return _make_square(dtype, layout, i)
    two_d = kind == "matrix"
    if layout in ("contig", "errors"):
        return _typed(_values(12, i).reshape(3, 4), dtype, i) if two_d else _typed(_values(7, i), dtype, i)
    if layout == "0d":
        return _typed(_values(1, i), dtype, i).reshape(())
    if layout == "empty":
        return _typed(_values(0, i), dtype, i).reshape((0, 4) if two_d else (0,))
    if layout == "strided":
        base = _typed(_values(24, i).reshape(6, 4), dtype, i) if two_d else _typed(_values(14, i), dtype, i)
        return base[::2]
    if layout == "reversed":
        return make(dtype, "contig", kind, i)[::-1]
    if layout == "transposed":
        return _typed(_values(12, i).reshape(4, 3), dtype, i).T
    if layout == "fortran":
        return np.asfortranarray(_typed(_values(12, i).reshape(3, 4), dtype, i))
    if layout == "broadcast":
        if i == 0:
            return np.broadcast_to(_typed(_values(4, i), dtype, i), (3, 4))
        return _typed(_values(3, i), dtype, i).reshape(3, 1)
    if layout == "special":  # integer and boolean operands of a special case keep ordinary values
        if np.dtype(dtype).kind not in "fc":
            return make(dtype, "contig", kind, i)
        return _special((3, 4) if two_d else (7,), dtype, i)
    raise ValueError(layout)


def _make_square(dtype: str, layout: str, i: int) -> np.ndarray:
    if layout in ("contig", "errors"):
        return _square(4, dtype, i)
    if layout == "batched":
        return _square(3, dtype, i, batch=(2,))
    if layout == "strided":
        return np.repeat(_square(4, dtype, i), 2, axis=0)[::2]
    if layout == "transposed":
        return _square(4, dtype, i).T
    if layout == "fortran":
        return np.asfortranarray(_square(4, dtype, i))
    if layout == "empty":
        return np.zeros((0, 0), dtype)
    if layout == "special":
        a = _square(4, dtype, i)
        a[1, 2] = np.nan
        return a
    if layout == "singular":  # a zero row: LU meets an exact zero pivot, so NumPy raises LinAlgError
        a = _square(4, dtype, i)
        a[2] = 0
        a[3] = a[0]
        return a
    if layout == "0d":
        return _typed(_values(1, i), dtype, i).reshape(())
    raise ValueError(layout)
