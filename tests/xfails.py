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
    """A known difference: ``op`` ("*": every op) on ``backend`` ("*": every backend) differs from NumPy for
    the cases matching ``dtypes`` and ``layouts`` (``None``: any), because of ``reason``."""

    op: str
    backend: str
    reason: str
    dtypes: tuple[str, ...] | None = None
    layouts: tuple[str, ...] | None = None

    def matches(self, op: str, backend: str, dtype: str | None, layout: str | None) -> bool:
        return (self.op in ("*", op) and self.backend in ("*", backend)
                and (self.dtypes is None or dtype in self.dtypes)
                and (self.layouts is None or layout in self.layouts))


_GPUS = ("cupy", "torch-cuda")
_FFT_NONFINITE = ("a NaN or an infinity in an FFT's input: cuFFT's butterflies spread NaN to every output, "
                  "NumPy's pocketfft keeps some outputs infinite (neither result carries information)")
_DEVICE_LAYOUT = ("a device copy is laid out as the device library chooses (C order, or the order torch infers "
                  "from a broadcast's zero strides), not as the host array was: memory-order queries differ")

XFAILS: tuple[XFail, ...] = (
    *(XFail(f"fft.{name}", gpu, _FFT_NONFINITE, dtypes=("float32", "float64"), layouts=("special",))
      for name in ("fft", "ifft", "rfft", "rfft2", "rfftn", "ihfft") for gpu in _GPUS),
    *(XFail(f"fft.{name}", gpu, _FFT_NONFINITE, dtypes=("float32", "float64", "complex128"), layouts=("special",))
      for name in ("fft2", "fftn", "ifft2", "ifftn") for gpu in _GPUS),
    XFail("isfortran", "cupy", _DEVICE_LAYOUT, layouts=("transposed", "fortran")),
    XFail("isfortran", "torch-cuda", _DEVICE_LAYOUT, layouts=("broadcast",)),
    *(XFail("nested_iters", gpu, _DEVICE_LAYOUT + ", so iterating in memory order (order='K') visits a reversed "
            "array in index order", layouts=("reversed",)) for gpu in _GPUS),
    # CuPy compiles its kernels to flush float32 subnormals to zero (cupy_target's docstring):
    # property tests meet them (an operand of 1e-43), the fixed cases do not.
    XFail("*", "cupy", "CuPy flushes float32 subnormals to zero, NumPy keeps them",
          dtypes=("float32", "complex64"), layouts=("subnormal",)),
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
