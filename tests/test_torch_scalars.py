"""torch runs a ufunc with a NumPy scalar operand (``x / np.sqrt(n)``): NumPy's scalars are
strong (NEP 50), so the loop and the result's dtype are NumPy's, and no call falls back."""

from __future__ import annotations

import numpy
import pytest
from conftest import backend_params

import dispatch

pytest.importorskip("torch")

CASES = [
    ("true_divide", numpy.float64, numpy.float64(44.7)),
    ("multiply", numpy.float32, numpy.float64(2.5)),
    ("multiply", numpy.float32, numpy.float32(2.5)),
    ("add", numpy.int8, numpy.int64(5)),
    ("subtract", numpy.float64, numpy.int32(3)),
    ("add", numpy.int16, True),
    ("maximum", numpy.float32, numpy.float16(1.5)),
]


@pytest.mark.parametrize("target", backend_params(("torch-cpu", "torch-cuda")))
@pytest.mark.parametrize(("name", "dtype", "scalar"), CASES, ids=lambda v: getattr(v, "__name__", repr(v)))
def test_a_numpy_scalar_operand_runs_on_torch_with_numpys_dtype(target, name, dtype, scalar):
    if dispatch.targets.probe(target) is None:
        pytest.skip(f"{target} is not available here")
    ref = (numpy.arange(1, 61, dtype=numpy.float64).reshape(6, 10) % 7).astype(dtype)
    x = dispatch.array(ref).to(target)
    for args, want in (((x, scalar), (ref, scalar)), ((scalar, x), (scalar, ref))):
        with dispatch.trace() as t, dispatch.using(target):
            got = getattr(dispatch, name)(*args)
        expected = getattr(numpy, name)(*want)
        assert not t.fallbacks, t.fallbacks
        assert got.dtype == expected.dtype and got.shape == expected.shape
        rtol = 1e-6 if expected.dtype.itemsize <= 4 else 1e-12
        numpy.testing.assert_allclose(numpy.asarray(got), expected, rtol=rtol)
