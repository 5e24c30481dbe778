"""``dispatch.random`` drawing NumPy's ``Generator(PCG64)`` stream on a CUDA target: large draws
under a forced CUDA target, or placed there by the router under automatic routing, go through
the device path (``dispatch.streams.device``); small ones, other generators and the legacy
``RandomState`` stay on the host, all with NumPy's numbers.

In CI the CUDA target is the fake CuPy and the device passes run in NumPy
(``NumpyKernels``); on a GPU machine, ``test_on_the_gpu`` runs the real kernels."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _synthetic import synthetic
from helpers import fake_cupy_router

import dispatch
from dispatch import random as drandom
from dispatch.routing import router
from dispatch.streams import kernels, prices

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


# ---- automatic routing: the router places the draw -------------------------------------------

ROUTED = 1 << 20  # a draw the synthetic GPU wins at its seed prices (17 ms on NumPy, about 3 there)


def test_auto_mode_draws_large_draws_on_the_device_and_small_ones_on_the_host(fake_device: CountingKernels) -> None:
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    ours, theirs = dispatch.random.default_rng(21), np.random.default_rng(21)
    z = ours.standard_normal((ROUTED // 64, 64))
    tiny = ours.random(1000)  # under the routing floor: NumPy, without asking the router
    mid = ours.random(40_000)  # routed, and priced cheaper on the host than the kernels' launches
    i = ours.integers(-5, 7, ROUTED + 3, dtype=np.int16)
    f = ours.standard_exponential(ROUTED, dtype=np.float32)
    n = ours.normal(1.0, 2.0, size=5)
    assert fake_device.draws >= 3  # (a ziggurat may decide more positions, in a second pass)
    assert [a.target for a in (z, tiny, mid, i, f, n)] == ["cupy", "numpy", "numpy", "cupy", "cupy", "numpy"]
    _bits(z, theirs.standard_normal((ROUTED // 64, 64)))
    _bits(tiny, theirs.random(1000))
    _bits(mid, theirs.random(40_000))
    _bits(i, theirs.integers(-5, 7, ROUTED + 3, dtype=np.int16))
    _bits(f, theirs.standard_exponential(ROUTED, dtype=np.float32))
    _bits(n, theirs.normal(1.0, 2.0, size=5))
    assert ours.bit_generator.state == theirs.bit_generator.state


def _draw_inputs(n: int) -> Any:
    from dispatch.arrays._call import Inputs
    from dispatch.base.devices import HOST_ONLY

    inputs = Inputs([])
    inputs.size, inputs.dtypes, inputs.devices = n, (np.dtype(np.float64),), HOST_ONLY
    return inputs


def test_auto_mode_a_draw_is_a_call_of_the_region_recorded_and_planned(fake_device: CountingKernels) -> None:
    """A routed draw is noted in the region being recorded, as any routed call: a loop that
    draws and computes on what it drew is planned with its draw, which the plan then places."""
    from dispatch.routing.decisions import DecisionKind

    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    live = router.ROUTER.live
    ours, theirs = dispatch.random.default_rng(8), np.random.default_rng(8)
    totals = []
    for step in range(6):
        x = ours.random(ROUTED)
        if step == 0:
            assert live.recording and live.nodes[-1].key.op == "random.Generator.random"
        totals.append(float((dispatch.cos(x) * 2.0).sum()))
    expected = [float((np.cos(theirs.random(ROUTED)) * 2.0).sum()) for _ in range(6)]
    assert totals == pytest.approx(expected, rel=1e-12)
    assert ours.bit_generator.state == theirs.bit_generator.state
    key = router.call_key(dispatch.base.ops.op_named("random.Generator.random"), _draw_inputs(ROUTED))
    assert router.cached(key) is not None and router.cached(key).kind is DecisionKind.PLANNED


def test_auto_mode_keeps_the_legacy_stream_and_other_generators_on_the_host(fake_device: CountingKernels) -> None:
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    dispatch.random.seed(9)
    legacy = dispatch.random.standard_normal(ROUTED)
    mt = dispatch.random.Generator(np.random.MT19937(3)).standard_normal(ROUTED)
    gamma = dispatch.random.default_rng(4).gamma(2.0, size=ROUTED)  # not a method drawn there
    np.random.seed(9)
    _bits(legacy, np.random.standard_normal(ROUTED))
    _bits(mt, np.random.Generator(np.random.MT19937(3)).standard_normal(ROUTED))
    _bits(gamma, np.random.default_rng(4).gamma(2.0, size=ROUTED))
    assert fake_device.draws == 0 and {legacy.target, mt.target, gamma.target} == {"numpy"}


def test_auto_mode_without_a_device_price_draws_on_the_host(fake_device: CountingKernels) -> None:
    router.use_calibration(synthetic(gpu=False, torch_cpu=True))  # torch-cpu draws no NumPy stream
    ours, theirs = dispatch.random.default_rng(5), np.random.default_rng(5)
    _bits(ours.standard_normal(ROUTED), theirs.standard_normal(ROUTED))
    assert fake_device.draws == 0 and ours.bit_generator.state == theirs.bit_generator.state


def test_auto_mode_without_the_kernels_falls_back_and_remembers(fake_device: CountingKernels,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drandom, "_cuda_kernels", lambda: None)  # CuPy without a CUDA device, say
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    ours, theirs = dispatch.random.default_rng(6), np.random.default_rng(6)
    for _ in range(2):
        a = ours.random(ROUTED)
        assert a.target == "numpy"
        _bits(a, theirs.random(ROUTED))
    key = router.call_key(dispatch.base.ops.op_named("random.Generator.random"), _draw_inputs(ROUTED))
    assert "cupy" in router.ROUTER.refusals[key]
    assert ours.bit_generator.state == theirs.bit_generator.state


def test_auto_mode_bad_arguments_raise_as_numpy(fake_device: CountingKernels) -> None:
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    ours, theirs = dispatch.random.default_rng(0), np.random.default_rng(0)
    for bad in (lambda g: g.integers(5, 5, size=ROUTED), lambda g: g.normal(0.0, -1.0, size=ROUTED),
                lambda g: g.standard_normal(ROUTED, dtype=np.int32), lambda g: g.random(ROUTED, dtype="nonsense")):
        with pytest.raises(Exception) as expected:
            bad(theirs)
        with pytest.raises(type(expected.value)):
            bad(ours)
    assert fake_device.draws == 0 and ours.bit_generator.state == theirs.bit_generator.state


def test_draw_prices_cross_where_the_launches_are_repaid() -> None:
    cal = synthetic(gpu=True, torch_cpu=True)
    from dispatch.routing import cost

    models = cost.models_from(cal)
    f64 = np.dtype(np.float64)

    def host(n: int) -> float:
        return prices.draw_seconds(models["numpy"], "standard_normal", f64, n)

    def device(n: int) -> float:
        return prices.draw_seconds(models["cupy"], "standard_normal", f64, n)

    assert host(drandom.ROUTED_DRAW_ELEMENTS) < device(drandom.ROUTED_DRAW_ELEMENTS)
    assert device(10**8) * 50 < host(10**8)
    assert prices.draw_seconds(models["torch-cpu"], "standard_normal", f64, 10**6) is None
    assert prices.draw_seconds(models["numpy"], "gamma", f64, 10**6) is None
    from dispatch.streams import calls

    assert {name.rpartition(".")[2] for name in drandom.DEVICE_DRAWS} == calls.METHODS  # routed: drawn there
    for name in drandom.DEVICE_DRAWS:  # every routed draw is priced
        assert prices.draw_seconds(models["cupy"], name.rpartition(".")[2], f64, 10**6) is not None


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


@pytest.mark.gpu
def test_auto_mode_on_the_gpu() -> None:
    if dispatch.targets.probe("cupy") is None or drandom._cuda_kernels() is None:
        pytest.skip("cupy or CuPy's CUDA kernels are not available here")
    from helpers import router_restored

    from dispatch.routing.history import History

    with router_restored(History(explore_probability=0.0)):
        router.use_calibration(synthetic(gpu=True, torch_cpu=False))
        ours, theirs = dispatch.random.default_rng(12), np.random.default_rng(12)
        z = ours.standard_normal(2_000_003)
        small = ours.random(1000)
        e = ours.exponential(2.0, size=(1000, 1001))
        u = ours.integers(0, 2**31 + 1, ROUTED, dtype=np.uint32)
        assert [a.target for a in (z, small, e, u)] == ["cupy", "numpy", "cupy", "cupy"]
        _bits(z, theirs.standard_normal(2_000_003))
        _bits(small, theirs.random(1000))
        _bits(e, theirs.exponential(2.0, size=(1000, 1001)))
        _bits(u, theirs.integers(0, 2**31 + 1, ROUTED, dtype=np.uint32))
        assert ours.bit_generator.state == theirs.bit_generator.state
