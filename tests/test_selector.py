"""The seed's selector, pinned fact by fact."""

from __future__ import annotations

import math

import pytest

from dispatch import Backend, BackendSelector, MoeThresholds, OpComplexity

S, V, G = Backend.SCALAR, Backend.SIMD, Backend.GPU
LOW, MEDIUM, HIGH = OpComplexity.LOW, OpComplexity.MEDIUM, OpComplexity.HIGH


def test_backend_prints_like_the_seed():
    assert [str(b) for b in Backend] == ["Scalar", "SIMD", "GPU"]


def test_complexity_is_ordered():
    assert LOW < MEDIUM < HIGH
    assert sorted([HIGH, LOW, MEDIUM]) == [LOW, MEDIUM, HIGH]


def test_defaults():
    s = BackendSelector()
    assert (s.pcie_bandwidth, s.gpu_gflops, s.min_dispatch_ratio) == (32e9, 20e12, 5.0)
    assert s.thresholds == MoeThresholds()


def test_select_backend_is_the_five_times_rule():
    s = BackendSelector()
    # transfer = 32e9 bytes / 32e9 = 1 s; GPU iff compute > 5 s, i.e. flops > 100e12.
    assert s.select_backend(32_000_000_000, 100_000_000_000_000) is V  # exactly 5x: not more
    assert s.select_backend(32_000_000_000, 100_000_000_000_001) is G
    assert s.select_backend(0, 1) is G
    assert s.select_backend(0, 0) is V


@pytest.mark.parametrize(
    ("mnk", "expected"),
    [
        ((64, 64, 64), V),
        # The book says 1024**3 -> GPU; the seed's own formula and defaults give SIMD.
        ((1024, 1024, 1024), V),
        ((20_000, 20_000, 20_000), G),
        ((18_750, 18_750, 18_750), V),  # the break-even n = 6 * ratio * gpu / pcie
        ((18_751, 18_751, 18_751), G),
    ],
)
def test_select_for_matmul(mnk, expected):
    assert BackendSelector().select_for_matmul(*mnk) is expected


def test_select_for_matmul_uses_f32_bytes_and_2mnk_flops():
    m, n, k = 3, 5, 7
    # Make the rule sit exactly on its boundary for these shapes, then step over it.
    data_bytes, flops = (m * k + k * n + m * n) * 4, 2 * m * n * k
    pcie = 1e9
    gpu_at_boundary = flops / (5.0 * data_bytes / pcie)
    at = BackendSelector(pcie_bandwidth=pcie, gpu_gflops=gpu_at_boundary)
    assert at.select_for_matmul(m, n, k) is V
    assert at.with_gpu_gflops(gpu_at_boundary * 0.999).select_for_matmul(m, n, k) is G


def test_select_for_vector_op():
    s = BackendSelector()
    # bytes = 12n, flops = n*ops: GPU iff ops/20e12 > 5*12/32e9, i.e. ops > 37_500
    assert s.select_for_vector_op(1_000_000, 2) is V
    assert s.select_for_vector_op(1_000, 37_500) is V
    assert s.select_for_vector_op(1_000, 37_501) is G


def test_select_for_elementwise():
    s = BackendSelector()
    assert s.select_for_elementwise(1_000_000) is S
    assert s.select_for_elementwise(1_000_001) is V
    assert s.select_for_elementwise(10**12) is V


@pytest.mark.parametrize(
    ("complexity", "n", "expected"),
    [
        (LOW, 0, S),
        (LOW, 500_000, S),
        (LOW, 1_000_000, S),
        (LOW, 1_000_001, V),
        (LOW, 10**12, V),  # never GPU
        (MEDIUM, 10_000, S),
        (MEDIUM, 10_001, V),
        (MEDIUM, 100_000, V),
        (MEDIUM, 100_001, G),
        (HIGH, 1_000, S),
        (HIGH, 1_001, V),
        (HIGH, 10_000, V),
        (HIGH, 10_001, G),
        (HIGH, 50_000, G),
    ],
)
def test_select_with_moe_thresholds(complexity, n, expected):
    assert BackendSelector().select_with_moe(complexity, n) is expected


def test_builders_return_configured_copies():
    base = BackendSelector()
    s = base.with_pcie_bandwidth(64e9).with_gpu_gflops(40e12).with_min_dispatch_ratio(3.0)
    assert (s.pcie_bandwidth, s.gpu_gflops, s.min_dispatch_ratio) == (64e9, 40e12, 3.0)
    assert base == BackendSelector()  # untouched


def test_threshold_table_can_be_set():
    table = MoeThresholds().with_tier(LOW, simd=10_000, gpu=5_000_000)
    s = BackendSelector().with_thresholds(table)
    assert s.select_with_moe(LOW, 10_001) is V
    assert s.select_with_moe(LOW, 5_000_001) is G
    assert s.select_with_moe(MEDIUM, 100_001) is G  # other tiers keep the seed's values
    assert MoeThresholds.from_dict(table.to_dict()) == table


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("builder", ["with_pcie_bandwidth", "with_gpu_gflops", "with_min_dispatch_ratio"])
def test_builders_reject_non_positive_or_non_finite(builder, bad):
    with pytest.raises(ValueError, match="must be a finite number > 0"):
        getattr(BackendSelector(), builder)(bad)


@pytest.mark.parametrize("bad", ["32e9", None, True, [1]])
def test_builders_reject_wrong_types(bad):
    with pytest.raises(TypeError, match="must be a real number"):
        BackendSelector().with_pcie_bandwidth(bad)


def test_sizes_must_be_non_negative_integers():
    s = BackendSelector()
    with pytest.raises(ValueError, match="data_size must be >= 0"):
        s.select_with_moe(LOW, -1)
    with pytest.raises(TypeError, match="must be an integer"):
        s.select_with_moe(LOW, 1.5)
    with pytest.raises(TypeError, match="must be an OpComplexity"):
        s.select_with_moe("LOW", 10)
    with pytest.raises(ValueError, match="m must be >= 0"):
        s.select_for_matmul(-1, 2, 3)
    with pytest.raises(TypeError, match="data_bytes must be an integer"):
        s.select_backend(1.0, 2)


def test_invalid_threshold_tables():
    with pytest.raises(TypeError, match="tuple of 3"):
        MoeThresholds(simd=(1, 2))
    with pytest.raises(ValueError, match=">= 0"):
        MoeThresholds(gpu=(None, -5, 10))
    with pytest.raises(ValueError, match="missing"):
        MoeThresholds.from_dict({"LOW": {"simd": 1, "gpu": None}})
    with pytest.raises(TypeError, match="MoeThresholds"):
        BackendSelector(thresholds={"LOW": 1})


def test_constructor_rejects_what_the_builders_reject():
    with pytest.raises(ValueError, match="PCIe bandwidth must be a finite number > 0"):
        BackendSelector(pcie_bandwidth=0)
    with pytest.raises(ValueError, match="GPU throughput must be a finite number > 0"):
        BackendSelector(gpu_gflops=math.nan)
    with pytest.raises(ValueError, match="minimum dispatch ratio must be a finite number > 0"):
        BackendSelector(min_dispatch_ratio=-5.0)
    with pytest.raises(TypeError, match="must be a real number"):
        BackendSelector(gpu_gflops="20e12")


# ---- the adaptive backend's seed facts (dispatch.routing.history) ------------------------------------------


def test_adaptive_defaults_hot_path_and_sampling_threshold():
    from dispatch.routing.history import History

    h = History()
    assert h.hot_calls_per_s == 10_000 and h.sample_threshold_s == 100e-6
    # "hot" is more than 10,000 calls a second: the 10,000th call within a second is not, the 10,001st is
    assert not any(h.count("add") for _ in range(10_000))
    assert h.count("add") and "add" in h.hot
    assert not h.count("sum")  # per operation


def test_the_fastest_historical_average_wins():
    from dispatch.routing.history import History

    h = History()
    key = ("matmul", (), 20, frozenset())
    for seconds in (2e-3, 3e-3, 2.5e-3, 3e-3):
        h.observe(key, "numpy", seconds)
    h.observe(key, "torch-cpu", 1.5e-3)
    # with measurements alone (no model), each target's estimate is its history: the fastest of
    # its first samples (each may have paid a one-time cost), then a moving average
    averages = {t: h.blended(key, t, None)[0] for t in ("numpy", "torch-cpu")}
    expected = 2e-3  # the fastest of NumPy's first two (a host target's first call may start a pool)
    for seconds in (2.5e-3, 3e-3):
        expected += h.alpha * (seconds - expected)
    assert averages["numpy"] == pytest.approx(expected)
    assert min(averages, key=averages.get) == "torch-cpu"
    assert h.blended(key, "cupy", 4e-3) == (4e-3, 0)  # never measured: the model (heuristic) stands
