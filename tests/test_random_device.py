"""``dispatch.random`` drawing NumPy's ``Generator(PCG64)`` stream on a CUDA target: large draws
under a forced CUDA target go through the device path (``dispatch.streams.device``), small ones,
other generators and the legacy ``RandomState`` stay on the host, all with NumPy's numbers.

In CI the CUDA target is the fake CuPy and the device passes run in NumPy
(``NumpyKernels``); on a GPU machine, ``test_on_the_gpu`` runs the real kernels."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import fake_cupy_router

import dispatch
from dispatch import random as drandom
from dispatch.streams import kernels

BIG = drandom.DEVICE_DRAW_ELEMENTS


class CountingKernels(kernels.NumpyKernels):
    def __init__(self) -> None:
        self.draws = 0

    def attempts(self, *args: Any) -> Any:
        self.draws += 1
        return super().attempts(*args)


@pytest.fixture
def fake_device(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingKernels]:
    """The fake CuPy as the cupy target, the device passes in NumPy, counted."""
    counting = CountingKernels()
    monkeypatch.setattr(drandom, "_cuda_kernels", lambda: counting)
    with fake_cupy_router(tmp_path, monkeypatch):
        yield counting


def _bits(a: Any, b: np.ndarray) -> None:
    host = np.asarray(a)
    assert host.dtype == b.dtype and host.shape == b.shape and host.tobytes() == b.tobytes()


def test_large_draws_go_through_the_device_path(fake_device: CountingKernels) -> None:
    ours, theirs = dispatch.random.default_rng(7), np.random.default_rng(7)
    with dispatch.using("cupy"):
        z = ours.standard_normal((BIG // 64, 64))
        i = ours.integers(0, 10, BIG + 1, dtype=np.int16)
        small = ours.random(100)
    assert fake_device.draws == 2 and z.target == "cupy" and i.target == "cupy" and small.target == "cupy"
    _bits(z, theirs.standard_normal((BIG // 64, 64)))
    _bits(i, theirs.integers(0, 10, BIG + 1, dtype=np.int16))
    _bits(small, theirs.random(100))
    assert ours.bit_generator.state == theirs.bit_generator.state
    _bits(ours.normal(size=5), theirs.normal(size=5))  # on the host again, the same stream


def test_host_draws_where_no_device_is_forced(fake_device: CountingKernels) -> None:
    ours, theirs = dispatch.random.default_rng(1), np.random.default_rng(1)
    _bits(ours.standard_normal(BIG), theirs.standard_normal(BIG))
    with dispatch.using("cupy"):
        other = dispatch.random.Generator(np.random.MT19937(3)).random(BIG)
        _bits(other, np.random.Generator(np.random.MT19937(3)).random(BIG))
        _bits(ours.gamma(2.0, size=BIG), theirs.gamma(2.0, size=BIG))  # not a method drawn there
        dispatch.random.seed(5)
        legacy = dispatch.random.rand(BIG)
    np.random.seed(5)
    _bits(legacy, np.random.rand(BIG))
    assert fake_device.draws == 0


def test_bad_arguments_raise_as_numpy(fake_device: CountingKernels) -> None:
    g = dispatch.random.default_rng(0)
    with dispatch.using("cupy"):
        with pytest.raises(ValueError):
            g.integers(5, 5, size=BIG)
        with pytest.raises(ValueError):
            g.normal(0.0, -1.0, size=BIG)
    assert fake_device.draws == 0


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["cupy", "torch-cuda"])
def test_on_the_gpu(name: str) -> None:
    if dispatch.targets.probe(name) is None or drandom._cuda_kernels() is None:
        pytest.skip(f"{name} or CuPy's CUDA kernels are not available here")
    ours, theirs = dispatch.random.default_rng(11), np.random.default_rng(11)
    with dispatch.using(name):
        z = ours.standard_normal(2_000_003)
        e = ours.exponential(2.0, size=(1000, 1001))
    assert z.target == name and e.target == name
    _bits(z, theirs.standard_normal(2_000_003))
    _bits(e, theirs.exponential(2.0, size=(1000, 1001)))
    assert ours.bit_generator.state == theirs.bit_generator.state
