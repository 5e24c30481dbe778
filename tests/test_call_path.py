"""The call path's handling of arguments: nested lists of arrays, and where indexing runs."""

from __future__ import annotations

import numpy as np
import pytest

import dispatch
from dispatch import router
from dispatch._call import Inputs
from dispatch._ops import GETITEM


def test_block_of_nested_lists_of_dispatch_arrays():
    a, b = np.arange(4.0).reshape(2, 2), np.ones((2, 2))
    got = dispatch.block([[dispatch.asarray(a), dispatch.asarray(b)], [dispatch.asarray(b), dispatch.asarray(a)]])
    assert isinstance(got, dispatch.ndarray)
    np.testing.assert_array_equal(np.asarray(got), np.block([[a, b], [b, a]]))


def test_indexing_runs_where_the_data_is():
    """``__getitem__`` is outside the catalog but local: the local rule comes first, so a device
    array is indexed on its device (host data: NumPy, as before)."""
    x = dispatch.asarray(np.arange(10.0))
    decision = router.decide(GETITEM, Inputs([x]), (x, 3), {})
    assert decision.target.name == "numpy" and decision.reason.startswith("local")


def test_a_list_of_device_scalars_is_stacked_where_they_live():
    """``stack`` of 0-d results left on a device (a loop's ``.sum()`` values): the list's items
    are seen as arrays, not handed back to NumPy, which would ask dispatch again."""
    torch = pytest.importorskip("torch")
    from dispatch._array import device_scalar

    values = [device_scalar(torch.tensor(float(i), dtype=torch.float64)) for i in range(3)]
    result = dispatch.stack(values)
    assert isinstance(result, dispatch.ndarray)
    np.testing.assert_array_equal(np.asarray(result), np.arange(3.0))
    assert result.dtype == np.float64 and result.shape == (3,)
