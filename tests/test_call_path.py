"""The call path's handling of arguments: nested lists of arrays, and where indexing runs."""

from __future__ import annotations

import numpy as np

import dispatch


def test_block_of_nested_lists_of_dispatch_arrays():
    a, b = np.arange(4.0).reshape(2, 2), np.ones((2, 2))
    got = dispatch.block([[dispatch.asarray(a), dispatch.asarray(b)], [dispatch.asarray(b), dispatch.asarray(a)]])
    assert isinstance(got, dispatch.ndarray)
    np.testing.assert_array_equal(np.asarray(got), np.block([[a, b], [b, a]]))
