"""The router: cold start, the cost policy on a synthetic calibration, the decision cache,
refusals, the adaptive history, and the MoE table derived from a calibration."""

from __future__ import annotations

import json
import math
import platform
import sys
import time
import types
from importlib.util import find_spec

import numpy as np
import pytest
from helpers import assert_same, patch_targets, router_restored

import dispatch
from dispatch import BackendSelector, OpComplexity, measure
from dispatch.arrays._call import Inputs, _layout
from dispatch.base.devices import HOST, Device
from dispatch.base.ops import op_named
from dispatch.routing import calibration, cost, router
from dispatch.routing.history import OUTLIER_RATIO, History


def _linear(overhead: float, per_element: float, sizes=(1_000, 10_000, 100_000, 1_000_000)) -> list[list[float]]:
    return [[n, overhead + per_element * n] for n in sizes]


def _cubic(overhead: float, per_flop: float, sides=(16, 64, 256, 1024)) -> list[list[float]]:
    return [[n, overhead + per_flop * n**3] for n in sides]


def synthetic(gpu: bool = False) -> calibration.Calibration:
    """NumPy: cheap calls, slow per element. torch-cpu: dearer calls, 4x faster per element.
    A GPU (optional): 20 µs calls, 100x faster per element, 10 GB/s transfers."""
    def target(overhead: float, speed: float, transfer: dict | None = None) -> dict:
        ops = {"add": _linear(overhead, 1e-9 / speed), "exp": _linear(overhead, 4e-9 / speed),
               "sum": _linear(overhead, 0.5e-9 / speed), "cumsum": _linear(overhead, 2e-9 / speed),
               "sort": _linear(overhead, 20e-9 / speed), "fft.fft": _linear(overhead, 10e-9 / speed),
               "matmul": _cubic(overhead, 2e-10 / speed), "linalg.solve": _cubic(overhead, 1e-9 / speed),
               "linalg.svd": _cubic(overhead, 1e-8 / speed)}
        return {"device": "cpu", "threads": 2, "call_overhead_s": overhead, "sync_overhead_s": 0.0,
                "memory_bandwidth": 10e9 * speed, "transfer": transfer or {}, "gemm": {},
                "ops": {"float64": ops, "float32": ops}}

    targets = {"numpy": target(1e-6, 1.0), "torch-cpu": target(5e-6, 4.0)}
    if gpu:
        targets["cupy"] = target(20e-6, 100.0, {"to_device_staged": 10e9, "to_device_pageable": 5e9,
                                               "to_host_staged": 10e9, "to_host_pageable": 3e9,
                                               "to_host_latency_s": 30e-6, "to_device_latency_s": 10e-6})
        targets["cupy"]["device"] = "cuda:0"
    return calibration.Calibration(fingerprint=calibration.fingerprint(), machine={}, targets=targets)


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No stored calibration, a fresh history, and the seed policy restored afterwards."""
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    with router_restored(History()):
        yield tmp_path


def _inputs(*arrays) -> Inputs:
    return Inputs(list(arrays))


def test_cold_start_routes_by_the_seed_table(isolated, monkeypatch):
    monkeypatch.setattr(router, "HOST_CORES", 16)  # a host whose cores torch's reductions thread over
    op = op_named("sum")
    small = _inputs(dispatch.ones(5_000))
    big = _inputs(dispatch.ones(50_000))
    assert router.decide(op, small, (), {}).target.name == "numpy"
    assert router.policy() == "seed"
    decision = router.decide(op, big, (), {})
    assert decision.reason.startswith("heuristic") and decision.kind is router.DecisionKind.SEED
    # SIMD tier: torch-cpu for sum where torch is installed, else numpy
    expected = "torch-cpu" if dispatch.targets.probe("torch-cpu") else "numpy"
    assert decision.target.name == expected


def test_each_rule_names_its_decision_by_kind_and_the_key_by_its_fields(isolated):
    """Code tells decisions apart by their kind, not their words: each rule's kind, and the
    call key's fields by name."""
    kinds = router.DecisionKind
    x = dispatch.asarray(np.arange(1000.0))
    small = router.decide(op_named("exp"), _inputs(dispatch.ones(10)), (), {})
    local = router.decide(op_named("transpose"), _inputs(x), (), {})
    host = router.decide(op_named("savetxt"), _inputs(x), (), {})
    assert (small.kind, local.kind, host.kind) == (kinds.SMALL, kinds.LOCAL, kinds.HOST_OP)
    with dispatch.using("numpy"):
        forced = router.decide(op_named("exp"), _inputs(x), (), {})
    assert forced.kind is kinds.FORCED and forced.key.forced == "numpy"
    key = small.key
    assert isinstance(key, router.CallKey) and key.op == "exp" and key.bucket == (10).bit_length()
    assert key.dtypes == (np.dtype("float64"),) and key.forced is None and key.layout is None
    router.refused(op_named("exp"), _inputs(x), dispatch.targets.get("numpy"), "a test's refusal")
    refused = router.cached(router.call_key(op_named("exp"), _inputs(x)))
    assert refused.kind is kinds.FALLBACK and refused.reason == "fallback: a test's refusal"


@pytest.mark.parametrize("name", ["sum", "mean"])
def test_on_two_cores_the_seed_keeps_reductions_on_numpy(isolated, monkeypatch, name):
    """torch-cpu's reductions win by their threads: on two cores the seed's SIMD tier keeps them
    on NumPy, whose results they are then exactly."""
    monkeypatch.setattr(router, "HOST_CORES", 2)
    x = np.random.default_rng(0).random((50_000, 2))
    decision = router.decide(op_named(name), _inputs(dispatch.asarray(x)), (), {"axis": 1})
    assert decision.kind is router.DecisionKind.SEED and decision.target.name == "numpy"
    assert decision.reason.endswith(": NumPy (torch-cpu's threads do not pay on 2 cores)")
    got = getattr(dispatch, name)(dispatch.asarray(x), axis=1)
    want = getattr(np, name)(x, axis=1)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


def test_a_seed_reason_names_where_the_call_went(isolated, monkeypatch):
    """The seed's table may name a tier nothing here runs (GPU on a CPU machine): the reason
    then says where the call ran, never only the tier it did not run on."""
    monkeypatch.setattr(router, "GPU_TARGETS", ())  # a machine without a GPU target
    op = op_named("linalg.lstsq")
    a = dispatch.asarray(np.ones((30_000, 12)))
    decision = router.decide(op, _inputs(a, dispatch.ones(30_000)), (), {})
    assert decision.reason.startswith("heuristic: seed table: HIGH on 360,000 elements -> GPU, but no GPU")
    assert decision.reason.endswith(": NumPy (the seed sends only sum, mean and prod to torch-cpu)")
    assert decision.target.name == "numpy"


def test_a_stored_calibration_is_loaded_on_first_use(isolated):
    synthetic().save()
    router.decide(op_named("sum"), _inputs(dispatch.ones(50_000)), (), {})
    assert router.policy() == "cost"


def test_a_calibration_for_other_libraries_is_named_once_with_the_command(isolated, caplog):
    """torch added after calibrating changes the fingerprint: the stored calibration no longer
    applies, and the first routed call says so in one line that names the command."""
    other = synthetic()
    other.fingerprint = "feedfacefeedface"  # as measured before torch was installed
    other.save(isolated / "calibration-feedfacefeedface.json")
    with caplog.at_level("WARNING", logger="dispatch"):
        router.decide(op_named("sum"), _inputs(dispatch.ones(50_000)), (), {})
        router.decide(op_named("sum"), _inputs(dispatch.ones(60_000)), (), {})
    assert router.policy() == "seed"
    said = [r.getMessage() for r in caplog.records if "calibrat" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0]
    assert "python -m dispatch calibrate" in said[0]


def test_no_word_on_a_machine_never_calibrated(isolated, caplog):
    with caplog.at_level("WARNING", logger="dispatch"):
        router.decide(op_named("sum"), _inputs(dispatch.ones(50_000)), (), {})
    assert not [r for r in caplog.records if "calibrat" in r.getMessage()]


def test_a_calibration_made_to_another_plan_is_not_used_from_the_cache(isolated, tmp_path):
    """One stored by an older dispatch, which measured fewer ops, would price them by
    extrapolation: the cache ignores it (``load_or_measure`` measures again); a path still loads."""
    older = synthetic()
    older.plan = ""  # a file from before plans were recorded
    older.save()
    assert calibration.load() is None
    router.decide(op_named("sum"), _inputs(dispatch.ones(50_000)), (), {})
    assert router.policy() == "seed"  # cold start, as with no calibration
    assert calibration.load(older.save(tmp_path / "older.json")).plan == ""
    calibration._loaded.clear()
    synthetic().save()
    assert calibration.load().plan == calibration.PLAN


def test_cost_policy_picks_the_cheaper_target(isolated):
    pytest.importorskip("torch")
    assert dispatch.targets.probe("torch-cpu") is not None  # up: its price alone decides, not its start-up
    router.use_calibration(synthetic())
    op = op_named("sum")
    # 1e3 elements: numpy 1 µs + 0.5 µs beats torch 5 µs + 0.125 µs
    small = router.decide(op, _inputs(dispatch.ones(1_000)), (), {})
    assert small.target.name == "numpy" and small.reason.startswith("cost model")
    # 1e6 elements: numpy 501 µs, torch 130 µs
    big = router.decide(op, _inputs(dispatch.ones(1_000_000)), (), {})
    assert big.target.name == "torch-cpu"
    assert big.predicted == pytest.approx(5e-6 + 0.125e-9 * 1e6, rel=0.05)


def test_transfers_are_priced(isolated):
    router.use_calibration(synthetic(gpu=True))
    models = cost.models_from(synthetic(gpu=True))
    gpu = type("FakeGpu", (), {"device": Device("cuda", 0), "name": "cupy"})()
    host = type("FakeHost", (), {"device": HOST, "name": "numpy"})()
    op = op_named("add")
    x = dispatch.ones(1_000_000)
    inputs = _inputs(x, x)
    on_gpu = cost.estimate(models["cupy"], gpu, op, inputs, scalar_result=False)
    compute = models["cupy"].seconds("add", 1e6, "float64")
    moved = 2 * models["cupy"].to_device_seconds(8e6)
    assert on_gpu == pytest.approx(compute + moved)
    assert moved > 0 and cost.estimate(models["numpy"], host, op, inputs, scalar_result=False) < on_gpu
    # a reduction read back to the host pays the round trip on the device only
    s = op_named("sum")
    assert cost.estimate(models["cupy"], gpu, s, _inputs(x), True) - cost.estimate(
        models["cupy"], gpu, s, _inputs(x), False) == pytest.approx(30e-6)


def test_curves_interpolate_and_extrapolate_by_work_shape():
    model = cost.TargetModel("numpy", synthetic().targets["numpy"])
    assert model.seconds("add", 1_000, "float64") == pytest.approx(2e-6)
    mid = model.seconds("add", 31_623, "float64")  # between 1e4 and 1e5, log-log
    assert 11e-6 < mid < 101e-6
    assert model.seconds("add", 2e6, "float64") == pytest.approx(2 * (1e-6 + 1e-3))  # linear past the end
    assert model.seconds("matmul", 2048, "float64") == pytest.approx(8 * (1e-6 + 2e-10 * 1024**3))  # cubic
    assert model.seconds("nothing", 10, "float64") is None
    assert model.gemm_flops(1024, 1024, 1024) == pytest.approx(2 * 1024**3 / (1e-6 + 2e-10 * 1024**3))


def test_matmul_is_sized_by_its_operands(isolated):
    a, b = dispatch.ones((64, 256)), dispatch.ones((256, 16))
    side = cost._size(op_named("matmul"), "matmul", _inputs(a, b))
    assert side == pytest.approx((64 * 256 * 16) ** (1 / 3))


def test_factorisations_of_tall_matrices_are_priced_by_the_tall_curve(isolated):
    cal = synthetic()
    numpy_data = cal.targets["numpy"]
    tall = dispatch.ones((200_000, 100))
    op = op_named("linalg.lstsq")
    side = (200_000 * 100 * 100) ** (1 / 3)  # past the last point: grows as the work
    model = cost.TargetModel("numpy", numpy_data)
    square = cost.compute_seconds(model, op, _inputs(tall))
    assert square == pytest.approx(model.seconds("linalg.svd", side, "float64"))  # no tall curve: the square one
    numpy_data["ops"]["float64"]["linalg.lstsq"] = [[64.0, 1e-4], [256.0, 2e-3], [512.0, 1e-2]]
    model = cost.TargetModel("numpy", numpy_data)
    assert cost.compute_seconds(model, op, _inputs(tall)) == pytest.approx(1e-2 * (side / 512) ** 3)
    assert cost.compute_seconds(model, op_named("linalg.svd"), _inputs(tall)) < square / 10
    wide_enough = dispatch.ones((300, 100))  # not tall: the square curve
    assert cost.compute_seconds(model, op, _inputs(wide_enough)) == pytest.approx(
        model.seconds("linalg.svd", (300 * 100 * 100) ** (1 / 3), "float64"))


def test_a_batch_of_short_transforms_is_priced_as_one_launch_where_that_is_less(isolated):
    """A device's time for one short transform is mostly its launch (60 µs for 1,024 points
    against 20 µs per call): a batch of 2,000 is one launch, priced at most as one transform of
    all its points less the longer length's log factor. A host whose short transform is compute
    keeps the per-transform price, which is the lesser there."""
    cal = synthetic(gpu=True)
    gpu = cal.targets["cupy"]
    gpu["ops"]["float64"] = {**gpu["ops"]["float64"], "fft.fft": [
        [1_024.0, 60e-6], [65_536.0, 70e-6], [1_048_576.0, 200e-6], [4_194_304.0, 700e-6]]}
    signals = dispatch.ones((2_000, 1_024))
    op = op_named("fft.fft")
    points = 2_000 * 1_024
    device = cost.TargetModel("cupy", gpu)
    per_transform = device.dispatch_overhead_s() + (60e-6 - device.dispatch_overhead_s()) * 2_000
    whole = device.seconds("fft.fft", float(points), "float64") * math.log2(1_024) / math.log2(points)
    assert whole < per_transform / 100
    assert cost.compute_seconds(device, op, _inputs(signals)) == pytest.approx(whole)
    cpu = cal.targets["numpy"]  # 10 µs a short transform; a long one past the caches, dearer per point
    cpu["ops"]["float64"] = {**cpu["ops"]["float64"], "fft.fft": [
        [1_024.0, 10e-6], [65_536.0, 1e-3], [1_048_576.0, 25e-3], [4_194_304.0, 120e-3]]}
    host = cost.TargetModel("numpy", cpu)
    per_transform = host.dispatch_overhead_s() + (10e-6 - host.dispatch_overhead_s()) * 2_000
    whole = host.seconds("fft.fft", float(points), "float64") * math.log2(1_024) / math.log2(points)
    assert per_transform < whole
    assert cost.compute_seconds(host, op, _inputs(signals)) == pytest.approx(per_transform)


def test_sorts_of_integers_are_priced_by_the_integer_curve(isolated):
    """torch and CuPy sort integers by radix sorts, far faster than floats: a group-by's keys
    are priced by the int64 curve where the calibration has one, else by float64's."""
    numpy_data = synthetic().targets["numpy"]
    model = cost.TargetModel("numpy", numpy_data)
    keys, values = dispatch.ones(100_000, dtype=np.int64), dispatch.ones(100_000)
    float_price = model.seconds("sort", 100_000, "float64")
    for name in ("sort", "argsort", "unique", "lexsort"):
        assert cost.compute_seconds(model, op_named(name), _inputs(keys)) == pytest.approx(float_price), name
    numpy_data["ops"]["int64"] = {"sort": [[1_000.0, 1e-6], [1_000_000.0, 1e-3]]}
    model = cost.TargetModel("numpy", numpy_data)
    for name in ("sort", "argsort", "unique", "lexsort"):
        assert cost.compute_seconds(model, op_named(name), _inputs(keys)) == pytest.approx(1e-4), name
    assert cost.compute_seconds(model, op_named("sort"), _inputs(values)) == pytest.approx(float_price)
    assert cost.compute_seconds(model, op_named("sum"), _inputs(keys)) == pytest.approx(
        model.seconds("sum", 100_000, "float64"))  # no integer curve for sums: float64's


def test_lexsort_is_priced_by_its_own_curve_and_floor(isolated):
    """NumPy's lexsort is a stable sort per key, far slower than its sort: where the calibration
    measured it, it has its own price and its own floor, so a group-by's lexsort reaches the
    router and a faster target at sizes where a sort stays on NumPy. A calibration that did not
    measure it prices it as a sort."""
    pytest.importorskip("torch")
    assert dispatch.targets.probe("torch-cpu") is not None  # up: its price alone decides, not its start-up
    cal = synthetic()
    sort_op, lexsort_op = op_named("sort"), op_named("lexsort")
    numpy_ops, torch_ops = cal.targets["numpy"]["ops"], cal.targets["torch-cpu"]["ops"]
    for dtype in ("float64", "float32"):  # NumPy sorts faster than torch-cpu
        torch_ops[dtype] = dict(torch_ops[dtype], sort=_linear(5e-6, 40e-9))
    router.use_calibration(cal)
    router.set_policy("cost")
    assert router.host_floor(lexsort_op) == router.host_floor(sort_op) > 5_000  # no lexsort curve: a sort's
    # ...and lexsorts 16x slower than it sorts, measured on int64 alone (``INTEGER_ONLY``): where
    # torch-cpu lexsorts slower still, its floor is as high as the sort's...
    for ops, line in ((numpy_ops, _linear(1e-6, 16 * 20e-9)), (torch_ops, _linear(5e-6, 32 * 20e-9))):
        ops["int64"] = {"sort": ops["float64"]["sort"], "lexsort": line}
    router.use_calibration(cal)
    assert router.host_floor(lexsort_op) > 5_000
    # ...and where it lexsorts faster, low
    for ops, line in ((numpy_ops, _linear(1e-6, 16 * 20e-9)), (torch_ops, _linear(5e-6, 40e-9))):
        ops["int64"] = {"sort": ops["float64"]["sort"], "lexsort": line}
    router.use_calibration(cal)
    model = router.ROUTER.models["numpy"]
    assert model.seconds("lexsort", 50_000, "int64") == pytest.approx(1e-6 + 50_000 * 16 * 20e-9, rel=1e-3)
    assert model.seconds("lexsort", 50_000, "float64") is None  # float keys: NumPy alone lexsorts them
    floor, sort_floor = router.host_floor(lexsort_op), router.host_floor(sort_op)
    assert floor < 5_000 < sort_floor
    keys = np.stack([np.arange(5_000) % 7, np.arange(5_000)])  # over the lexsort floor, under the sort's
    with dispatch.trace() as t:
        got = dispatch.lexsort(keys)
        floats = dispatch.lexsort(keys * 0.5)
        dispatch.sort(keys[1])
    assert [(r.op, r.target) for r in t.records] == [("lexsort", "torch-cpu"), ("lexsort", "numpy"), ("sort", "numpy")]
    assert t.records[1].reason == "cost model: nothing else can be priced"
    assert_same(got, np.lexsort(keys))
    assert_same(floats, np.lexsort(keys * 0.5))


def test_sin_and_cos_are_priced_by_their_own_curve_where_measured(isolated):
    """NumPy's float64 sin and cos run libm per element on some CPUs, 5-10x its exp, where torch's
    do not: a calibration that measured sin prices sin, cos and hypot by its curve (their own
    floor, and a faster target over it), while exp keeps its own; one that did not prices them as
    an exp."""
    pytest.importorskip("torch")
    assert dispatch.targets.probe("torch-cpu") is not None  # up: its price alone decides, not its start-up
    cal = synthetic()
    numpy_ops, torch_ops = cal.targets["numpy"]["ops"], cal.targets["torch-cpu"]["ops"]
    for dtype in ("float64", "float32"):  # NumPy's exp is faster than torch-cpu's
        torch_ops[dtype] = dict(torch_ops[dtype], exp=_linear(5e-6, 8e-9))
    router.use_calibration(cal)
    router.set_policy("cost")
    exp_op, sin_op, cos_op, hypot_op = (op_named(n) for n in ("exp", "sin", "cos", "hypot"))
    assert router.host_floor(sin_op) == router.host_floor(cos_op) == router.host_floor(exp_op) > 500_000  # as exps
    for dtype in ("float64", "float32"):
        numpy_ops[dtype] = dict(numpy_ops[dtype], sin=_linear(1e-6, 40e-9))  # 10x its exp
        torch_ops[dtype] = dict(torch_ops[dtype], sin=_linear(5e-6, 8e-9))
    router.use_calibration(cal)
    model = router.ROUTER.models["numpy"]
    assert model.seconds("sin", 100_000, "float64") == pytest.approx(1e-6 + 100_000 * 40e-9, rel=1e-3)
    floor = router.host_floor(sin_op)
    assert floor == router.host_floor(cos_op) == router.host_floor(hypot_op) < 5_000 < router.host_floor(exp_op)
    x = np.linspace(0.0, 3.0, 20_000)
    with dispatch.trace() as t:
        s, c, h, e = dispatch.sin(x), dispatch.cos(x), dispatch.hypot(x, x), dispatch.exp(x)
    assert [(r.op, r.target) for r in t.records] == [
        ("sin", "torch-cpu"), ("cos", "torch-cpu"), ("hypot", "torch-cpu"), ("exp", "numpy")]
    for got, want in ((s, np.sin(x)), (c, np.cos(x)), (h, np.hypot(x, x)), (e, np.exp(x))):
        assert_same(got, want)


def test_decision_cache_hit_is_the_same_object(isolated):
    op = op_named("sum")
    inputs = _inputs(dispatch.ones(50_000))
    assert router.decide(op, inputs, (), {}) is router.decide(op, _inputs(dispatch.ones(40_000)), (), {})


@pytest.mark.parametrize(("name", "a", "b"), [
    ("matmul", (1_000, 32), (32, 50_000)), ("matmul", (32, 50_000), (50_000, 32)), ("matmul", (7, 3, 4), (4, 5)),
    ("matmul", (6,), (6, 9)), ("matmul", (9, 6), (6,)), ("dot", (4, 5), (2, 5, 3)), ("dot", (8, 3), (3,)),
    ("inner", (4, 5), (6, 5)), ("matvec", (3, 4, 5), (5,)), ("matvec", (4, 5), (3, 5)),
])
def test_a_products_key_carries_its_output_size(name, a, b):
    op = op_named(name)
    x, y = dispatch.ones(a), dispatch.ones(b)
    assert _layout(op, (x, y), {}) == ("product", getattr(np, name)(np.ones(a), np.ones(b)).size.bit_length())


def test_products_of_one_input_size_are_decided_apart(isolated):
    """The distances of 1000 queries to 50000 points and the Gram matrix of those points have
    inputs of one size: what was learned of one does not decide the other."""
    router.use_calibration(synthetic())
    op = op_named("matmul")
    points, queries = dispatch.ones((50_000, 32)), dispatch.ones((1_000, 32))
    distances = Inputs([queries, points.T], _layout(op, (queries, points.T), {}))
    gram = Inputs([points.T, points], _layout(op, (points.T, points), {}))
    assert distances.size == gram.size
    _assert_learned_of_one_decides_only_it(op, gram, distances)


def _assert_learned_of_one_decides_only_it(op, learned, other):
    """Calls of one op and size bucket, on two keys: what the history measured of ``learned``
    decides it, and not ``other``."""
    pytest.importorskip("torch")
    assert router.call_key(op, learned) != router.call_key(op, other)
    for _ in range(10):
        router.history.observe(router.call_key(op, learned), "numpy", 1e-4)
        router.history.observe(router.call_key(op, learned), "torch-cpu", 1e-2)
    assert router.decide(op, learned, (), {}).reason.startswith("history")
    assert not router.decide(op, other, (), {}).reason.startswith("history")


def test_a_targets_first_calls_are_counted_per_op_dtypes_and_axis_not_per_product_size():
    """A device's first call of a kind pays a one-time cost (a kernel compiled, a module
    loaded): per reduction axis, not per product output size (BLAS compiles nothing per shape)."""
    from dispatch.routing.history import call_kind

    dtypes = (np.dtype("float64"), np.dtype("float64"))
    small, large = (("matmul", dtypes, 21, frozenset(), None, ("product", b)) for b in (10, 26))
    assert call_kind(small, "cupy") == call_kind(large, "cupy") == ("matmul", dtypes, None, "cupy")
    rows, columns = (("sum", dtypes[:1], 21, frozenset(), None, (2, axis)) for axis in (0, 1))
    assert call_kind(rows, "cupy") != call_kind(columns, "cupy")


def test_an_element_wise_calls_key_says_whether_its_operands_broadcast(isolated):
    """A weight update (two operands of one shape) and logits less their row maxima (a column
    broadcast), of one size: what was learned of one does not decide the other."""
    router.use_calibration(synthetic())
    op = op_named("subtract")
    weights, logits = dispatch.ones((256, 512)), dispatch.ones((16_384, 10))
    update = Inputs([weights, weights], _layout(op, (weights, weights), {}))
    centred = Inputs([logits, logits[:, :1]], _layout(op, (logits, logits[:, :1]), {}))
    assert (update.layout, centred.layout) == (None, "broadcast")
    assert _layout(op, (weights, 2.0), {}) is None and _layout(op, (dispatch.asarray(2.0), weights), {}) is None
    assert update.size.bit_length() == centred.size.bit_length()
    _assert_learned_of_one_decides_only_it(op, centred, update)


def test_refusal_is_remembered_for_the_key(isolated):
    pytest.importorskip("torch")
    assert dispatch.targets.probe("torch-cpu") is not None  # up: its start-up is not charged to the call
    router.use_calibration(synthetic())
    op = op_named("sum")
    x = dispatch.ones(1_000_000, dtype=np.uint8)  # torch-cpu refuses unsigned reductions
    as_called = Inputs([x], _layout(op, (x,), {}))  # what the call path sees: a full reduction
    first = router.decide(op, as_called, (), {})
    assert first.target.name == "torch-cpu"
    assert int(dispatch.sum(x)) == 1_000_000
    again = router.decide(op, as_called, (), {})
    assert again.target.name == "numpy"
    assert "torch-cpu" in router.ROUTER.refusals[again.key]


def test_history_corrects_a_wrong_model(isolated):
    pytest.importorskip("torch")
    assert dispatch.targets.probe("torch-cpu") is not None  # up: its start-up is not charged to the call
    router.use_calibration(synthetic())
    op = op_named("sum")
    inputs = _inputs(dispatch.ones(1_000_000))
    first = router.decide(op, inputs, (), {})
    assert first.target.name == "torch-cpu" and first.sample
    for _ in range(8):  # torch-cpu turns out slow here; numpy fast
        router.history.observe(first.key, "torch-cpu", 5e-3)
        router.history.observe(first.key, "numpy", 1e-4)
    router.clear_decisions()
    learned = router.decide(op, inputs, (), {})
    assert learned.target.name == "numpy" and learned.reason.startswith("history")


def test_history_blends_with_growing_confidence():
    h = History()
    key = ("sum", (np.dtype("float64"),), 20, frozenset({HOST}))
    assert h.blended(key, "numpy", 1.0) == (1.0, 0)
    h.observe(key, "numpy", 0.0)
    one, _ = h.blended(key, "numpy", 1.0)
    for _ in range(20):
        h.observe(key, "numpy", 0.0)
    many, n = h.blended(key, "numpy", 1.0)
    assert n == 21 and 0 < many < one < 1.0


def test_a_long_host_call_s_one_timing_outweighs_the_model_but_a_device_s_does_not():
    # one timing of half a second on the host is the call's time within a few per cent; the
    # model, off by 5x here (sin priced as exp), is not. A device's first timing may be a compile.
    h = History()
    key = ("sin", (np.dtype("float64"),), 25, frozenset({HOST}))
    h.observe(key, "numpy", 0.5)
    h.observe(key, "cupy", 5.0)  # its first call of the kind in the process loaded the kernel: no price
    assert h.blended(key, "cupy", 0.1) == (0.1, 0)
    h.observe(key, "cupy", 0.5)
    host, n = h.blended(key, "numpy", 0.1)
    device, _ = h.blended(key, "cupy", 0.1)
    assert n == 1 and 0.45 < host <= 0.5
    assert device == pytest.approx(0.1 + (0.5 - 0.1) / 3)
    short = ("sin", (np.dtype("float64"),), 10, frozenset({HOST}))
    h.observe(short, "numpy", 50e-6)
    assert h.blended(short, "numpy", 20e-6)[0] == pytest.approx(20e-6 + 30e-6 / 3)


def test_one_slow_sample_moves_the_average_little_and_a_real_slowdown_is_followed():
    h = History()
    key = ("matmul", (np.dtype("float64"),), 23, frozenset({HOST}))
    for _ in range(20):
        h.observe(key, "numpy", 15e-3)
    h.observe(key, "numpy", 85e-3)  # a storm of page faults, or another process's burst
    one_slow = h.stats[key]["numpy"].seconds
    assert one_slow == pytest.approx(15e-3 * (1 + h.alpha * (OUTLIER_RATIO - 1)))
    assert h.measured_s == pytest.approx(20 * 15e-3 + 85e-3)  # what it took is still spent
    for _ in range(15):
        h.observe(key, "numpy", 60e-3)  # the call really became four times slower
    assert h.stats[key]["numpy"].seconds == pytest.approx(60e-3, rel=0.05)
    coarse = ("sum", (np.dtype("float64"),), 10, frozenset({HOST}))
    for seconds in (0.0, 0.0, 1e-3):  # a clock that read zero twice
        h.observe(coarse, "numpy", seconds)
    assert h.stats[coarse]["numpy"].seconds == pytest.approx(h.alpha * 1e-3)


def test_exploration_is_bounded():
    h = History(explore_probability=1.0, explore_samples=2, explore_budget=0.05)
    key = ("sum", (), 1, frozenset())
    ranked = [(1e-3, "numpy"), (2e-3, "torch-cpu"), (9e-3, "cupy")]
    for _ in range(39):
        h.observe(key, "numpy", 1e-3)
    assert h.explore(key, ranked) is None  # 39 ms so far: 5% of it does not pay a 2 ms call
    h.observe(key, "numpy", 1e-3)
    assert h.explore(key, ranked) == "torch-cpu"  # within 3x, never measured, and paid for
    h.observe(key, "torch-cpu", 2e-3, explored=True)
    h.observe(key, "torch-cpu", 2e-3, explored=True)
    assert h.explore(key, ranked) is None  # measured enough; cupy is over 3x the best
    h2 = History(explore_probability=1.0)
    h2.observe(("x",), "numpy", 1.0)
    h2.observe(("x",), "numpy", 1.0, explored=True)  # half the measured time was exploration
    assert h2.explore(key, ranked) is None  # budget spent


def test_exploration_never_pays_a_device_first_call_of_a_kind():
    # A first call of a kind pays a one-time cost on a device (CuPy compiles a kernel per op,
    # dtypes and dimensions), which a few explored calls cannot repay.
    h = History(explore_probability=1.0)
    key = ("sum", (np.dtype("float64"),), 20, frozenset(), None, (2, 0))
    other_axis = (*key[:5], (2, 1))
    for k in (key, other_axis):
        h.observe(k, "cupy", 0.1)  # the first, its kernel's load, is no price
        h.observe(k, "cupy", 0.1)  # a budget for the explorations below
    ranked = [(1e-3, "cupy"), (1.5e-3, "torch-cuda"), (2e-3, "torch-cpu")]
    assert h.explore(key, ranked) == "torch-cpu"  # a host target: no such cost
    h.observe(key, "torch-cpu", 2e-3, explored=True)
    h.observe(key, "torch-cpu", 2e-3, explored=True)
    assert h.explore(key, ranked) is None  # torch-cuda never ran a sum over axis 0 of 2-D float64
    other_size = (*key[:2], 12, *key[3:])
    h.observe(other_size, "torch-cuda", 1e-4)  # it has, at another size
    assert h.explore(key, ranked) == "torch-cuda"
    assert h.explore(other_axis, ranked) == "torch-cpu"  # another axis is another kernel
    h.observe(other_axis, "torch-cpu", 2e-3)
    h.observe(other_axis, "torch-cpu", 2e-3)
    assert h.explore(other_axis, ranked) is None


def test_hot_path_detection():
    h = History(hot_calls_per_s=100)
    assert not any(h.count("add") for _ in range(50))
    assert any(h.count("add") for _ in range(200))
    assert "add" in h.hot


def test_history_persists(tmp_path):
    h = History()
    key = ("sum", (np.dtype("float32"),), 17, frozenset({HOST}))
    h.observe(key, "numpy", 2e-3)
    h.save(tmp_path / "h.json")
    back = History()
    back.load(tmp_path / "h.json")
    assert back.stats[key]["numpy"].seconds == pytest.approx(2e-3)


def test_saved_history_keys_are_the_keys_calls_look_up(isolated, tmp_path):
    op = op_named("max")
    full, rows = _inputs(dispatch.ones((400, 10))), _inputs(dispatch.ones((400, 10)))
    full.layout, rows.layout = (2, None), (2, 1)
    key_full, key_rows = router.call_key(op, full), router.call_key(op, rows)
    assert key_full != key_rows  # a full reduction and one over rows of ten are different kinds of call
    h = History()
    h.observe(key_full, "numpy", 2e-3)
    h.observe(key_rows, "torch-cpu", 1e-3)
    h.save(tmp_path / "h.json")
    back = History()
    back.load(tmp_path / "h.json")
    assert back.stats[key_full]["numpy"].seconds == pytest.approx(2e-3)
    assert back.stats[key_rows]["torch-cpu"].seconds == pytest.approx(1e-3)


def test_selector_from_a_synthetic_calibration(isolated):
    s = BackendSelector.from_calibration(synthetic(gpu=True))
    low_simd, medium_simd, high_simd = s.thresholds.simd
    # add: numpy 1 µs + 1 ns/el, torch 5 µs + 0.25 ns/el: torch wins past n = 5333
    assert low_simd == 4096
    assert all(v is not None for v in (medium_simd, high_simd))
    assert s.pcie_bandwidth == 10e9
    # the GPU pays 2 x 8 bytes/element at 10 GB/s for add: never faster than torch's 0.25 ns
    assert s.thresholds.gpu[OpComplexity.LOW] is None
    assert s.thresholds.gpu[OpComplexity.HIGH] is not None
    assert BackendSelector.from_calibration(None) == BackendSelector()  # isolated: none stored


def test_the_machines_table_is_derived_when_asked_not_by_routed_calls(isolated, monkeypatch):
    """A script's calls never read the calibration's MoE table (scikit-learn routing and
    ``recommend_backend`` do): it is derived at the first ask, from the calibration in use."""
    derived = []
    real = BackendSelector.from_calibration.__func__
    monkeypatch.setattr(BackendSelector, "from_calibration",
                        classmethod(lambda cls, cal: derived.append(cal) or real(cls, cal)))
    cal = synthetic(gpu=False)
    router.use_calibration(cal)
    x = dispatch.arange(100_000.0)
    assert float((x * 2.0).sum()) == float((np.arange(100_000.0) * 2.0).sum())
    assert derived == []
    table = router.ROUTER.selector()
    assert derived == [cal] and router.ROUTER.selector() is table  # once
    assert table == real(BackendSelector, cal) and table != BackendSelector()


def _quick_sides(target) -> dict[tuple[str, str], list[float]]:
    """(dtype, op) -> the sides a quick calibration of ``target`` times, smallest first."""
    return {(dtype, op): [calibration._side(op, size) for size in quick_sizes]
            for dtype, representatives in calibration._plan(target, True) for op, _, quick_sizes in representatives}


def test_calibration_round_trip_and_cache(isolated):
    cal = measure.calibrate(quick=True, progress=False, only=("numpy",))
    assert set(cal.targets) == {"numpy"} and cal.targets["numpy"]["seconds"] > 0
    ops = cal.targets["numpy"]["ops"]["float64"]
    assert {"add", "sum", "matmul", "sort", "linalg.svd", "linalg.lstsq"} <= set(ops)
    # sides of 64n x n x n work; a point whose time extrapolates past the slow bound ends a curve, as
    # a loaded machine's may: the points measured are the plan's first ones
    planned = _quick_sides(dispatch.targets.probe("numpy"))
    assert planned["float64", "linalg.lstsq"] == pytest.approx([4 * 32, 4 * 128])
    assert planned["int64", "lexsort"] == [1_000, 262_144]  # two keys of half
    for (dtype, op), sides in planned.items():
        measured = [x for x, _ in cal.targets["numpy"]["ops"][dtype].get(op, [])]
        assert measured and measured == pytest.approx(sides[:len(measured)]), (dtype, op)
    assert all(t > 0 for points in ops.values() for _, t in points)
    assert set(cal.targets["numpy"]["ops"]) == {"float64", "int64"}  # float32 priced from float64
    assert set(cal.targets["numpy"]["ops"]["int64"]) == {"sort", "lexsort"}
    full = dict(calibration._plan(dispatch.targets.probe("numpy"), quick=False))
    assert set(full) == {"float32", "float64", "int64"} and [op for op, *_ in full["int64"]] == ["sort", "lexsort"]
    assert not {"lexsort"} & {op for dtype in ("float64", "float32") for op, *_ in full[dtype]}  # integers alone
    # memory bandwidth timed beyond the last-level cache, not on the add curve's in-cache sizes
    numpy_ = cal.targets["numpy"]
    assert numpy_["memory_bandwidth_bytes"] >= max(2 * calibration.cache_bytes(), 64 << 20)
    assert 1e8 < numpy_["memory_bandwidth"] < 1e12
    stored = list(isolated.glob("calibration-*.json"))
    assert len(stored) == 1 and json.loads(stored[0].read_text())["fingerprint"] == calibration.fingerprint()
    calibration._loaded.clear()
    assert calibration.load().targets == json.loads(cal.to_json())["targets"]
    assert measure.load_or_measure().fingerprint == cal.fingerprint
    assert router.policy() == "cost"


def test_a_calibration_looks_only_for_the_targets_the_router_prices(isolated, monkeypatch):
    """Dask is reached by size, never priced: a calibration does not import it (1.3 s of a
    quick calibration's 8.8 on an H100 machine)."""
    looked_for = []
    probe = dispatch.targets.probe
    patch_targets(monkeypatch, probe=lambda name: looked_for.append(name) or probe(name))
    monkeypatch.setattr(measure, "_measure_target", lambda target, *args, **kwargs: {"ops": {}})
    cal = measure.calibrate(quick=True, progress=False, save=False)
    assert set(looked_for) == set(router.PRICED) and "dask" not in looked_for
    assert set(cal.targets) == {n for n in router.PRICED if probe(n) is not None}


def test_the_bandwidth_operands_outgrow_the_largest_cache(monkeypatch, tmp_path):
    """An ``add`` of 1,000,000 float64 (24 MB) fits a 32 MiB cache: priced by it, a tall lstsq
    that streams from memory came out 3x too fast."""
    assert [calibration._cache_size(t) for t in ("32768K", "1M", "512K\n", "2G", "", "n/a")] == [
        32 << 20, 1 << 20, 512 << 10, 2 << 30, 0, 0]
    monkeypatch.setattr(calibration, "cache_bytes", lambda target=None: 256 << 20)  # a large server's L3
    assert calibration.stream_bytes() == 512 << 20
    monkeypatch.setattr(calibration, "cache_bytes", lambda target=None: 4 << 20)
    assert calibration.stream_bytes() == 64 << 20  # the floor: far beyond any small cache
    monkeypatch.setattr(calibration, "cache_bytes", lambda target=None: 4 << 30)
    assert calibration.stream_bytes() == 1 << 30  # the ceiling: a quick calibration stays quick


def test_a_slow_point_is_the_least_of_a_few_calls():
    """A slow op is timed by few calls; one disturbed call must not set its price (a 4x slow
    point made an H100's CuPy lstsq look slower than NumPy's)."""
    durations = iter([0.2, 0.08, 0.02, 0.02])  # a warm-up that compiles, a disturbed call, a calm one
    seconds = calibration._timer(lambda: time.sleep(next(durations)), lambda: None, budget=0.04)
    assert 0.02 <= seconds < 0.05
    assert next(durations) == 0.02  # three calls: the warm-up is one of the few
    durations = iter([0.02, 0.08, 0.08, 0.5])  # a calm warm-up, as slow ops' warm-ups are
    assert 0.02 <= calibration._timer(lambda: time.sleep(next(durations)), lambda: None, budget=0.04) < 0.05
    durations = iter([0.2, 0.2])  # over a third of the slow point: one warm call says enough
    assert calibration._timer(lambda: time.sleep(next(durations)), lambda: None, budget=0.04) >= 0.2
    durations = iter([0.2, 0.04, 0.02])  # a quick calibration's: the warm-up and one call
    assert 0.04 <= calibration._timer(lambda: time.sleep(next(durations)), lambda: None, 0.01, slow_calls=2) < 0.1
    assert next(durations) == 0.02


def test_a_size_ladder_stops_before_a_point_its_work_makes_slow(monkeypatch):
    assert calibration._longer_than("sort", [1_000_000, 0.116], 4_000_000, 0.3)  # torch-cpu's float sort
    assert not calibration._longer_than("sort", [1_000_000, 0.05], 4_000_000, 0.3)
    assert calibration._longer_than("matmul", [256, 0.005], 1_024, 0.3)  # 64x the work
    assert not calibration._longer_than("matmul", [256, 0.004], 1_024, 0.3)
    tall = 64 * calibration.TALL ** (1 / 3)  # lstsq of 64·64 x 64, stored as the side of its work
    assert calibration._longer_than("linalg.lstsq", [tall, 0.04], 128, 0.3)  # 8x the work
    assert not calibration._longer_than("linalg.lstsq", [tall, 0.03], 128, 0.3)
    assert calibration._longer_than("add", [1_000, 0.31], 1_001, 0.3)  # a point that took it
    numpy_target = dispatch.targets.probe("numpy")
    for seconds, points in ((0.2, 1), (1e-6, None)):  # every op stops after its first point, or none does
        monkeypatch.setattr(calibration, "_timer", lambda run, sync, budget, slow_calls=3, s=seconds: s)
        out = measure._measure_target(numpy_target, True, calibration._Inputs(), lambda label: None)
        for op, _, quick_sizes in calibration.REPRESENTATIVES:
            dtype = "int64" if op in calibration.INTEGER_ONLY else "float64"
            assert len(out["ops"][dtype][op]) == (points or len(quick_sizes)), op


def test_a_product_far_slower_than_the_size_below_is_measured_again(monkeypatch):
    """One busy core stalls a multi-threaded BLAS at every barrier: NumPy's matmul of 256 measured
    6 ms where it takes 0.08, and ended its ladder, pricing larger products far too slow. Such a
    point is measured again after pauses, the least kept; other ops, whose time per element grows
    past the caches, are not."""
    from dispatch.cli.calibrate import render

    made = []
    monkeypatch.setattr(measure, "_call_for", lambda op: lambda *args: made.append((op, args[0])))
    glitches = {("matmul", 256): iter([6e-3, 5e-3]),  # disturbed twice, then calm
                ("linalg.solve", 256): iter([6e-3, 5e-3, 7e-3])}  # disturbed throughout

    def timer(run, sync, budget, slow_calls=3):
        made.clear()
        run()
        if not made:  # the call overhead
            return 1e-6
        op, a = made[-1]
        if op in calibration.SQUARE_OPS:
            n = a.shape[-1]
            return next(glitches.get((op, n), iter(())), 1e-12 * n**3)  # one rate at every side
        return 1e-9 * a.size * (100 if op == "add" and a.size >= 1_000_000 else 1)

    pauses = []
    monkeypatch.setattr(calibration, "_timer", timer)
    monkeypatch.setattr(calibration.time, "sleep", pauses.append)
    numpy_target = dispatch.targets.probe("numpy")
    out = measure._measure_target(numpy_target, True, calibration._Inputs(), lambda label: None)
    calm = 1e-12 * 256**3
    assert out["ops"]["float64"]["matmul"] == [[32, 1e-12 * 32**3], [256, calm], [1_024, 1e-12 * 1_024**3]]
    assert out["ops"]["float64"]["linalg.solve"] == [[32, 1e-12 * 32**3], [256, 5e-3]]
    assert out["measured_again"] == {"float64 matmul 256": [6e-3, 5e-3, calm],
                                     "float64 linalg.solve 256": [6e-3, 5e-3, 7e-3]}
    assert pauses == list(calibration._RETRY_PAUSES_S) * 2
    assert [x for x, _ in out["ops"]["float64"]["add"]] == list(calibration._VECTOR_QUICK)  # not measured again
    assert calibration._off_curve("linalg.svd", [64, 1e-3], [256, 1e-3 * 64 * 1.6])
    assert not calibration._off_curve("linalg.svd", [64, 1e-3], [256, 1e-3 * 64 * 1.4])  # within the spread seen
    assert not calibration._off_curve("sort", [1_000, 1e-6], [1_000_000, 1.0])
    measure._measure_ops(numpy_target, True, calibration._Inputs(), lambda label: None, out,
                             lambda op: op == "linalg.solve")  # again, later (after a calibration's children)
    assert out["ops"]["float64"]["linalg.solve"] == [[32, 1e-12 * 32**3], [256, calm]]  # this time's point
    assert out["measured_again"]["float64 linalg.solve 256"] == [6e-3, 5e-3, 7e-3, calm]  # every try kept
    assert len(out["measured_again"]) == 2
    cal = calibration.Calibration(fingerprint="f", machine={}, targets={"numpy": out}, quick=True)
    assert "  numpy float64 matmul 256: 6, 5, 0.0168 ms" in render(cal, "here")


def test_an_op_a_target_fails_at_a_size_ends_its_ladder_and_says_why(monkeypatch):
    """Out of memory (or any refusal) at one size: the points below stay, the ladder ends, and the
    calibration keeps why, so that a failure, or a bug, is not silent."""
    from dispatch.cli.calibrate import render

    def timer(run, sync, budget, slow_calls=3):
        run()
        return 1e-6

    real_call_for = measure._call_for

    def call_for(op):
        fn = real_call_for(op)
        if op != "sort":
            return fn

        def sort(a):
            if a.size > 1_000:
                raise MemoryError("out of memory allocating 2097152 bytes")
            return fn(a)

        return sort

    monkeypatch.setattr(calibration, "_timer", timer)
    monkeypatch.setattr(measure, "_call_for", call_for)
    numpy_target = dispatch.targets.probe("numpy")
    out = measure._measure_target(numpy_target, True, calibration._Inputs(), lambda label: None)
    assert out["ops"]["float64"]["sort"] == [[1_000, 1e-6]]
    assert out["stopped"] == {"float64 sort": "at 262144: MemoryError: out of memory allocating 2097152 bytes",
                              "int64 sort": "at 262144: MemoryError: out of memory allocating 2097152 bytes"}
    assert len(out["ops"]["float64"]["add"]) == len(calibration._VECTOR_QUICK)  # the other ops: every size
    cal = calibration.Calibration(fingerprint="f", machine={}, targets={"numpy": out}, quick=True)
    text = render(cal, "here")
    assert "  numpy float64 sort at 262144: MemoryError: out of memory" in text
    assert "stopped early" not in render(calibration.Calibration(fingerprint="f", machine={}, targets={
        "numpy": {**out, "stopped": {}}}, quick=True), "here")


def _target(name: str, library: str, host: bool) -> types.SimpleNamespace:
    return types.SimpleNamespace(name=name, library=library, device=types.SimpleNamespace(is_host=host))


def test_a_calibration_makes_a_gpus_first_solver_calls_in_children_while_it_measures_devices(isolated, monkeypatch):
    """Where the driver compiles a library's solver kernels at their first call (minutes of a
    fresh machine's calibration), children make those calls, every size it measures spread over
    the cores but four, and one child the first calls of its other ops, started before any target
    is looked for, while the other devices are measured whole, then its own but for its solvers;
    those and the host targets wait for them."""
    events = []

    class Child:
        def __init__(self, argv, **kwargs):
            self.argv = argv
            events.append(("start", argv[3], tuple(argv[4:])))

        def wait(self, timeout=None):
            events.append(("wait", self.argv[4]))

    found = {"numpy": _target("numpy", "numpy", True), "cupy": _target("cupy", "cupy", False),
             "torch-cuda": _target("torch-cuda", "torch", False)}
    info = calibration.machine()
    monkeypatch.setattr(calibration, "machine", lambda: info)
    monkeypatch.setattr(measure.subprocess, "Popen", Child)
    monkeypatch.setattr(measure.os, "cpu_count", lambda: 7)  # three children, four cores left
    patch_targets(monkeypatch, available=lambda: found)
    patch_targets(monkeypatch, probe=lambda name: events.append(("probe", name)) or found.get(name))
    monkeypatch.setattr(measure, "_likely", lambda name: True)
    monkeypatch.setattr(calibration, "_plan", lambda target, quick: [  # the progress bar's steps, the children's ops
        ("float32", [("add", (1_000, 2_000), (1_000,)), ("linalg.solve", (16,), (16,))])])
    solvers = ("linalg.solve", "linalg.svd", "linalg.lstsq")

    def measured(target, which, out=None):
        picked = {op for op, _, _ in calibration.REPRESENTATIVES if which(op)}
        events.append(("measure", target.name, "solvers" if picked == set(solvers) else
                       "all but solvers" if not picked & set(solvers) else "all"))
        return out if out is not None else {}

    monkeypatch.setattr(measure, "_measure_target",
                        lambda target, quick, inputs, tick, which=lambda op: True: measured(target, which))
    monkeypatch.setattr(measure, "_measure_ops",
                        lambda target, quick, inputs, tick, out, which: measured(target, which, out))
    monkeypatch.setattr(router, "use_calibration", lambda cal: None)
    cal = measure.calibrate(quick=True, progress=False, save=False)
    assert list(cal.targets) == ["numpy", "cupy", "torch-cuda"]
    started = [e for e in events if e[0] == "start"]
    assert len(started) == 3 and {e[1] for e in started} == {"cupy"}
    assert events[:3] == started  # before the parent looks for any target (imports its library)
    made = sorted(call for e in started[:2] for call in e[2])
    assert made == sorted(f"{op}:{size}:float64" for op, _, sizes in calibration.REPRESENTATIVES if op in solvers
                          for size in sizes)
    assert started[0][2][0] == "linalg.solve:256:float64"  # the largest first, one a child
    assert started[2][2] == ("others:quick",)  # the other ops, at the sizes and dtypes it measures
    assert [e for e in events if e[0] not in ("start", "probe")] == [
        ("measure", "torch-cuda", "all"), ("measure", "cupy", "all but solvers"),  # torch compiles nothing
        ("wait", "linalg.solve:256:float64"), ("wait", "linalg.svd:128:float64"), ("wait", "others:quick"),
        ("measure", "numpy", "all"), ("measure", "cupy", "solvers")]
    assert set(cal.extra["phases"]) == {"finding the targets", "waiting for the first calls", "timing start-up"}
    for env, cores in ((None, 5), (("CUDA_CACHE_DISABLE", "1"), 16)):  # no cores to spare; no cache to warm
        if env:
            monkeypatch.setenv(*env)
        monkeypatch.setattr(measure.os, "cpu_count", lambda cores=cores: cores)
        assert measure._start_first_calls(list(found), quick=False) == []
    monkeypatch.delenv("CUDA_CACHE_DISABLE")
    full = measure._start_first_calls(list(found), quick=False)
    assert len(full) == 12  # 20 calls over 11 children, and the rest
    assert sorted(call for child in full[:-1] for call in child.argv[4:]) == sorted(
        f"{op}:{size}:{dtype}" for op, sizes, _ in calibration.REPRESENTATIVES if op in solvers
        for size in sizes for dtype in calibration.DTYPES)
    assert full[0].argv[4:] == ["linalg.solve:1024:float64", "linalg.solve:64:float32"]  # the largest spread first
    monkeypatch.setattr(measure, "_likely", lambda name: False)  # not installed, or no GPU
    assert measure._start_first_calls(list(found), quick=False) == []
    monkeypatch.setattr(measure, "_likely", lambda name: True)
    (isolated / "calibration-0123.json").write_text("{}")  # calibrated with other libraries: compiles anew
    assert len(measure._start_first_calls(list(found), quick=False)) == 12
    calibration._default_path(calibration.fingerprint()).write_text("{}")  # calibrated before: compiled then
    assert measure._start_first_calls(list(found), quick=False) == []


def test_a_device_point_still_off_its_curve_beside_the_children_is_measured_again_after_them(isolated, monkeypatch):
    """torch-cuda's lstsq of 4096 x 64 read 0.13-0.38 s while the children compiled (the GPU's time
    sliced among a dozen processes), 8-63 ms otherwise: what its retries could not fix is measured
    again once the children are done, and nothing else is."""
    events = []

    class Child:
        def __init__(self, argv, **kwargs):
            self.argv = argv

        def wait(self, timeout=None):
            events.append("wait")

    found = {"numpy": _target("numpy", "numpy", True), "cupy": _target("cupy", "cupy", False),
             "torch-cuda": _target("torch-cuda", "torch", False)}
    beside = {"torch-cuda": {"linalg.lstsq": [[64, 5e-4], [256, 0.25]], "matmul": [[16, 1e-5], [256, 2e-5]]},
              "cupy": {"matmul": [[16, 1e-5], [256, 2e-5]]}}  # on its curve
    info = calibration.machine()
    monkeypatch.setattr(calibration, "machine", lambda: info)
    monkeypatch.setattr(measure.subprocess, "Popen", Child)
    monkeypatch.setattr(measure.os, "cpu_count", lambda: 7)
    patch_targets(monkeypatch, probe=found.get)
    monkeypatch.setattr(measure, "_likely", lambda name: True)
    monkeypatch.setattr(calibration, "_plan", lambda target, quick: [])  # the progress bar's steps

    def measure_target(target, quick, inputs, tick, which=lambda op: True):
        events.append(("whole" if which("linalg.lstsq") else "but solvers", target.name))
        return {"ops": {"float64": dict(beside.get(target.name, {}))}}

    def measure_ops(target, quick, inputs, tick, out, which):
        picked = sorted(op for op, _, _ in calibration.REPRESENTATIVES if which(op))
        events.append(("ops", target.name, tuple(picked)))
        if "linalg.lstsq" in picked and target.name == "torch-cuda":
            out["ops"]["float64"]["linalg.lstsq"] = [[64, 5e-4], [256, 0.012]]
        return out

    monkeypatch.setattr(measure, "_measure_target", measure_target)
    monkeypatch.setattr(measure, "_measure_ops", measure_ops)
    monkeypatch.setattr(router, "use_calibration", lambda cal: None)
    cal = measure.calibrate(quick=True, progress=False, save=False)
    after = events[events.index("wait") + events.count("wait"):]
    assert after == [("whole", "numpy"), ("ops", "cupy", ("linalg.lstsq", "linalg.solve", "linalg.svd")),
                     ("ops", "torch-cuda", ("linalg.lstsq",))]
    assert cal.targets["torch-cuda"]["ops"]["float64"]["linalg.lstsq"][-1] == [256, 0.012]
    assert calibration._off_curve_ops({"ops": {"float64": beside["torch-cuda"]}}) == {"linalg.lstsq"}
    assert calibration._off_curve_ops({"ops": {"float64": {"sort": [[1_000, 1e-6], [10_000, 1.0]]}}}) == set()


def test_a_host_product_still_off_its_curve_is_measured_again_once_every_target_was(isolated, monkeypatch):
    """On the 2-core machine NumPy's float64 matmul of 256 read 12-16 ms in all three tries of one
    calibration (0.38 ms calm) and ended NumPy's ladder: its products were priced
    30x too slow and went to torch-cpu. What the retries could not fix is measured again after the
    other targets, and the calm ladder kept; a ladder on its curve is not measured again."""
    events = []
    found = {"numpy": _target("numpy", "numpy", True), "torch-cpu": _target("torch-cpu", "torch", True)}
    first = {"numpy": {"matmul": [[64, 6e-6], [256, 14e-3]], "linalg.svd": [[64, 1e-4], [256, 6e-3]]},
             "torch-cpu": {"matmul": [[64, 8e-6], [256, 5e-4], [1_024, 3e-2]]}}
    calm = [[64, 6e-6], [256, 3.8e-4], [1_024, 2.2e-2]]
    monkeypatch.setattr(measure, "_likely", lambda name: False)  # no children
    monkeypatch.setattr(measure, "_start_aside", lambda names, quick: {})
    patch_targets(monkeypatch, probe=found.get)
    monkeypatch.setattr(calibration, "_plan", lambda target, quick: [])

    def measure_target(target, quick, inputs, tick, which=lambda op: True):
        events.append(("whole", target.name))
        return {"ops": {"float64": dict(first[target.name])}}

    def measure_ops(target, quick, inputs, tick, out, which):
        picked = tuple(sorted(op for op, _, _ in calibration.REPRESENTATIVES if which(op)))
        events.append(("ops", target.name, picked))
        out["ops"]["float64"]["matmul"] = calm
        return out

    monkeypatch.setattr(measure, "_measure_target", measure_target)
    monkeypatch.setattr(measure, "_measure_ops", measure_ops)
    monkeypatch.setattr(router, "use_calibration", lambda cal: None)
    cal = measure.calibrate(quick=False, progress=False, save=False)
    assert events == [("whole", "numpy"), ("whole", "torch-cpu"), ("ops", "numpy", ("matmul",))]
    assert cal.targets["numpy"]["ops"]["float64"]["matmul"] == calm
    assert cal.targets["numpy"]["ops"]["float64"]["linalg.svd"] == first["numpy"]["linalg.svd"]  # on its curve


def test_retries_stop_once_a_target_spent_its_retry_budget(isolated, monkeypatch):
    """On a 2-core machine at load 8 a quick calibration spent 40 of its 70 s measuring
    factorisations again that stayed 50x slow through every retry: each target's retries stop
    at ``RETRY_BUDGET_S`` (2 s quick), within a ladder and after every target was measured."""
    numpy_target = dispatch.targets.get("numpy")
    monkeypatch.setattr(calibration, "_plan", lambda target, quick: [("float64", (("matmul", (64, 256), (64, 256)),))])
    monkeypatch.setattr(measure.time, "sleep", lambda s: None)
    timed = []
    slow = {64: 1e-5, 256: 0.5}  # 256 at 1/780 the rate of 64: off the curve whatever the retries

    def timer(run, sync, budget, slow_calls=3):
        timed.append(run.args[0].shape[0])
        return slow[run.args[0].shape[0]]

    monkeypatch.setattr(calibration, "_timer", timer)
    measure._measure_ops(numpy_target, True, calibration._Inputs(), lambda label: None, {"ops": {}, "gemm": {}},
                         lambda op: True)
    assert timed == [64, 256, 256, 256]  # the point and its two retries: budget left
    timed.clear()
    calibration._retried_s["numpy"] = calibration.RETRY_BUDGET_S[True]  # spent
    out = measure._measure_ops(numpy_target, True, calibration._Inputs(), lambda label: None,
                               {"ops": {}, "gemm": {}}, lambda op: True)
    assert timed == [64, 256] and "measured_again" not in out
    assert calibration._may_retry("numpy", quick=False)  # a full calibration's budget is larger
    calibration._retried_s.clear()


def test_a_quick_calibration_measures_cupy_in_a_child_while_this_process_imports_torch(isolated, monkeypatch):
    """The child starts before any target is looked for and is done before CuPy is looked for
    here (after torch-cpu, whose probe imports torch); what it measured is CuPy's. A child that
    failed leaves CuPy to this process. Its figures stand, even one off its curve (measuring it
    again here would make CuPy's first calls in this process)."""
    events, outcome = [], {"code": 0}
    measured = {"ops": {"float64": {"add": [[1_000, 1e-5]], "matmul": [[64, 1e-5], [256, 1e-2]]}},
                "transfer": {"to_host_latency_s": 1e-5}}

    class Child:
        def __init__(self, argv, **kwargs):
            events.append(("start", argv[-1]))

        def communicate(self, timeout=None):
            events.append(("finish",))
            self.returncode = outcome["code"]
            return json.dumps({"measured": measured, "seconds": 0.8}).encode(), b""

    found = {"numpy": _target("numpy", "numpy", True), "torch-cpu": _target("torch-cpu", "torch", True),
             "cupy": _target("cupy", "cupy", False), "torch-cuda": _target("torch-cuda", "torch", False)}
    info = calibration.machine()
    monkeypatch.setattr(calibration, "machine", lambda: info)
    monkeypatch.setattr(measure.subprocess, "Popen", Child)
    monkeypatch.setattr(measure, "_start_first_calls", lambda names, quick: [])  # calibrated before
    monkeypatch.setattr(measure.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(measure, "_likely", lambda name: True)
    monkeypatch.setattr(measure, "_torch_to_import", lambda: True)
    patch_targets(monkeypatch, probe=lambda name: events.append(("probe", name)) or found.get(name))
    monkeypatch.setattr(calibration, "_plan", lambda target, quick: [("float64", [("add", (1_000,), (1_000,))])])
    monkeypatch.setattr(measure, "_measure_target", lambda target, quick, inputs, tick, which=lambda op: True:
                        events.append(("measure", target.name)) or tick(target.name) or {"ops": {}})
    monkeypatch.setattr(measure, "_measure_ops", lambda target, *args: events.append(("again", target.name)))
    monkeypatch.setattr(router, "use_calibration", lambda cal: None)
    ticks = []
    monkeypatch.setattr(measure, "_ticker", lambda total, progress: iter([ticks.append]))
    cal = measure.calibrate(quick=True, progress=False, save=False)
    assert events == [("start", "cupy"), ("probe", "numpy"), ("probe", "torch-cpu"), ("finish",), ("probe", "cupy"),
                      ("probe", "torch-cuda"), ("probe", "torch-mps"),
                      ("measure", "numpy"), ("measure", "torch-cpu"), ("measure", "torch-cuda")]
    assert cal.targets["cupy"] == {**measured, "seconds": 0.8} and cal.extra["measured_aside"] == ["cupy"]
    assert ticks == ["numpy", "torch-cpu", "cupy float64 add", "torch-cuda"]  # the progress bar counts its ops
    events.clear()
    outcome["code"] = 1  # the child failed: CuPy is measured here
    cal = measure.calibrate(quick=True, progress=False, save=False)
    assert ("measure", "cupy") in events and "measured_aside" not in cal.extra
    # none for a full calibration, where torch is imported already, where no torch target is looked
    # for before CuPy (its import would not overlap the child), on few cores, or where CuPy is not
    # likely to be found
    assert measure._start_aside(list(found), quick=False) == {}
    assert measure._start_aside(["numpy", "cupy"], quick=True) == {}
    assert measure._start_aside(["cupy", "torch-cuda"], quick=True) == {}
    monkeypatch.setattr(measure.os, "cpu_count", lambda: 3)
    assert measure._start_aside(list(found), quick=True) == {}
    monkeypatch.setattr(measure.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(measure, "_likely", lambda name: False)
    assert measure._start_aside(list(found), quick=True) == {}
    monkeypatch.setattr(measure, "_torch_to_import", lambda: False)
    monkeypatch.setattr(measure, "_likely", lambda name: True)
    assert measure._start_aside(list(found), quick=True) == {}


def test_the_child_measuring_aside_runs_in_a_fresh_interpreter(monkeypatch):
    """Its command line works: here on NumPy, as if it were CuPy. A target it cannot find fails it."""
    monkeypatch.setattr(measure, "MEASURED_ASIDE", frozenset({"numpy", "torch-mps"}))
    monkeypatch.setattr(measure.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(measure, "_likely", lambda name: True)
    monkeypatch.setattr(measure, "_torch_to_import", lambda: True)
    children = measure._start_aside(["torch-cpu", "numpy", "torch-mps"], quick=True)  # after a torch target
    assert set(children) == {"numpy", "torch-mps"}
    done = measure._finish_aside(children["numpy"])
    planned = calibration._plan(dispatch.targets.probe("numpy"), quick=True)
    assert {dtype: list(ops) for dtype, ops in done["measured"]["ops"].items()} == {
        dtype: [op for op, *_ in representatives] for dtype, representatives in planned}
    assert done["measured"]["call_overhead_s"] > 0 and done["seconds"] > 0
    assert [x for x, _ in done["measured"]["ops"]["float64"]["add"]] == list(calibration._VECTOR_QUICK)
    if dispatch.targets.probe("torch-mps") is None:
        assert measure._finish_aside(children["torch-mps"]) is None
    else:
        children["torch-mps"].kill()
        children["torch-mps"].communicate()


def test_a_target_is_likely_where_its_library_is_installed_and_a_gpu_is_listed(monkeypatch):
    monkeypatch.setattr(calibration, "_driver_gpus", lambda: ["NVIDIA H100 80GB HBM3", "NVRM version: 580"])
    assert measure._likely("numpy") and measure._likely("torch-cuda") == bool(find_spec("torch"))
    assert not measure._likely("a-library-nobody-installed")
    # no GPU driver: only what CUDA_VISIBLE_DEVICES says, or Apple silicon, which the fingerprint lists
    monkeypatch.setattr(calibration, "_driver_gpus", lambda: [])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(calibration.sys, "platform", "darwin")
    monkeypatch.setattr(calibration.platform, "machine", lambda: "arm64")
    assert calibration._gpu_hardware() == ["apple silicon", "visible 0"]
    assert not measure._likely("numpy")


def test_the_first_call_children_run_in_a_fresh_interpreter(monkeypatch):
    """The children's command line works: here on NumPy, as if it were such a library."""
    monkeypatch.setattr(measure, "COMPILES_ON_FIRST_CALL", frozenset({"numpy"}))
    monkeypatch.setattr(measure.os, "cpu_count", lambda: 6)
    monkeypatch.setattr(measure, "_likely", lambda name: True)
    children = measure._start_first_calls(["numpy"], quick=True)
    measure._finish_first_calls(children)
    assert len(children) == 2 and [c.returncode for c in children] == [0, 0]
    made = []
    monkeypatch.setattr(measure, "_call_for",
                        lambda op: lambda *args: made.append((op, [(a.shape, a.dtype) for a in args])))
    monkeypatch.setattr(measure.sys, "argv", ["-c", "numpy", "linalg.lstsq:16:float64", "sort:64:int64"])
    measure._first_calls()
    tall = calibration.TALL * 16
    assert made == [("linalg.lstsq", [((tall, 16), np.float64), ((tall,), np.float64)]), ("sort", [((64,), np.int64)])]
    made.clear()
    monkeypatch.setattr(measure.sys, "argv", ["-c", "numpy", "others:quick"])
    measure._first_calls()
    planned = calibration._plan(dispatch.targets.probe("numpy"), quick=True)
    assert [op for op, _ in made] == [op for _, representatives in planned for op, _, sizes in representatives
                                      if op not in ("linalg.solve", "linalg.svd", "linalg.lstsq") for _ in sizes]
    assert ("sort", [((1_000,), np.int64)]) in made and ("add", [((1_000,), np.float64)] * 2) in made


def test_calibration_draws_each_operand_once_for_every_op_and_target():
    draw = calibration._Inputs()
    x, again = draw("add", 1_000, "float32")
    assert x is again and x.dtype == np.float32 and x.shape == (1_000,)
    assert draw("sort", 1_000, "float32")[0] is x and draw("sum", 1_000, "float64")[0].dtype == np.float64
    a, b = draw("matmul", 64, "float64")
    assert a is not b and draw("linalg.svd", 64, "float64")[0] is a
    lhs, rhs = draw("linalg.solve", 64, "float64")
    assert np.linalg.cond(lhs) < 2.0 and rhs.shape == (64,)
    tall, y = draw("linalg.lstsq", 16, "float64")
    assert tall.shape == (calibration.TALL * 16, 16) and y.shape == (calibration.TALL * 16,)


def test_fingerprint_is_stable_and_names_the_machine():
    info = calibration.machine()
    assert calibration.fingerprint(info) == calibration.fingerprint()
    assert {"cpu", "cpu_count", "gpus", "libraries"} <= set(info)
    assert info["libraries"]["numpy"] == np.__version__


def test_the_fingerprints_library_versions_are_what_their_metadata_says(tmp_path, monkeypatch):
    """Read from the ``.dist-info`` folders' names on ``sys.path`` (not ``importlib.metadata``,
    too slow for a script's first call), and as ``importlib.metadata`` gives them: a folder's
    name in any case, and an egg's version from its metadata."""
    from importlib import metadata

    for dist in ("torch", "scikit-learn"):
        try:
            expected = metadata.version(dist)
        except metadata.PackageNotFoundError:
            expected = None
        assert calibration._versions().get(dist) == expected
    site = tmp_path / "site"
    site.mkdir()
    (site / "Torch-9.1.dist-info").mkdir()  # a name pip writes in the project's own case
    (site / "scikit_learn-0.1.egg-info").mkdir()
    (site / "notes.txt").write_text("not a distribution")
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setattr(metadata, "version", lambda dist: {"scikit-learn": "0.1"}[dist])
    calibration._versions.cache_clear()
    try:
        assert calibration._versions() == {"python": platform.python_version(), "numpy": np.__version__,
                                           "torch": "9.1", "scikit-learn": "0.1"}
    finally:
        calibration._versions.cache_clear()


def test_calibration_file_of_another_version_is_ignored(isolated):
    (isolated / f"calibration-{calibration.fingerprint()}.json").write_text(json.dumps({"version": 99}))
    assert calibration.load() is None


def test_a_sorts_floor_follows_its_integer_curve_too(isolated):
    """torch and CuPy sort integers by radix sorts, floats by comparison sorts: where another
    target sorts int64 faster than NumPy, integer sorts over that size reach the router, though
    NumPy sorts floats fastest at every size (dataprep medium's lexsort had stayed on NumPy under
    a floor priced from floats, 0.38x NumPy's time on torch-cpu)."""
    pytest.importorskip("torch")
    cal = synthetic()
    torch_ops = cal.targets["torch-cpu"]["ops"]
    for dtype in ("float64", "float32"):  # NumPy sorts floats faster than torch-cpu
        torch_ops[dtype] = dict(torch_ops[dtype], sort=_linear(5e-6, 40e-9))
    router.use_calibration(cal)
    router.set_policy("cost")
    sort_op = op_named("sort")
    assert router.host_floor(sort_op) > 50_000  # no integer curves: priced from floats
    cal.targets["numpy"]["ops"]["int64"] = {"sort": _linear(1e-6, 20e-9)}
    torch_ops["int64"] = {"sort": _linear(5e-6, 4e-9)}  # a radix sort: 5x faster past the overhead
    router.use_calibration(cal)
    assert router.host_floor(sort_op) < 50_000
    keys, values = np.arange(50_000)[::-1] % 977, np.linspace(1.0, 0.0, 50_000)
    with dispatch.trace() as t:
        got, floats = dispatch.sort(keys), dispatch.sort(values)
    assert [(r.op, r.target) for r in t.records] == [("sort", "torch-cpu"), ("sort", "numpy")]
    assert_same(got, np.sort(keys))
    assert_same(floats, np.sort(values))


def test_cost_floor_keeps_small_calls_on_numpy(isolated):
    pytest.importorskip("torch")
    router.use_calibration(synthetic())
    floor = router.host_floor(op_named("add"))
    # torch wins past about 5,333 elements, by more than routing a call costs (10 µs) past 18,667
    assert floor == 16_384
    assert math.log2(floor).is_integer()


def test_unknown_policy():
    with pytest.raises(ValueError, match="unknown routing policy"):
        router.set_policy("fastest")


def test_inputs_count_the_elements_of_a_native_torch_tensor():
    torch = pytest.importorskip("torch")
    inputs = _inputs(torch.ones(3, 4, dtype=torch.float64), np.ones(5))
    assert inputs.size == 12 and inputs.nbytes == (12 + 5) * 8  # torch's .size() is a shape, not a count


def test_the_first_call_of_a_kind_is_timed_even_under_the_threshold(isolated):
    pytest.importorskip("torch")
    router.use_calibration(synthetic())
    op = op_named("sum")
    inputs = _inputs(dispatch.ones(50_000))  # torch-cpu 17.5 µs against NumPy's 26 µs: far under 100 µs
    first = router.decide(op, inputs, (), {})
    assert first.target.name == "torch-cpu" and first.predicted < router.history.sample_threshold_s
    assert first.sample  # timed once, though predicted under the threshold
    router.observe(first, 5e-3)  # the call really took 5 ms (a thread pool woken for one small call)
    second = router.decide(op, inputs, (), {})
    assert second.target.name == "numpy" and second.sample  # NumPy's first call is timed in turn
    router.observe(second, 30e-6)
    again = router.decide(op, inputs, (), {})
    assert again.target.name == "torch-cpu" and again.explored  # it lost on its only call: once more
    router.observe(again, 4e-3)
    settled = router.decide(op, inputs, (), {})
    assert settled.target.name == "numpy" and not settled.sample  # under the threshold, measured: no more timing
    assert settled is router.decide(op, inputs, (), {})  # and cached


def test_a_target_that_lost_its_first_call_to_a_one_time_cost_wins_on_its_second(isolated):
    pytest.importorskip("torch")
    router.use_calibration(synthetic())
    op = op_named("sum")
    inputs = _inputs(dispatch.ones(1_000_000))
    first = router.decide(op, inputs, (), {})
    assert first.target.name == "torch-cpu"
    router.observe(first, 50e-3)  # its thread pool started on this call: far behind anything
    second = router.decide(op, inputs, (), {})
    assert second.target.name == "numpy"
    router.observe(second, 2e-3)
    retried = router.decide(op, inputs, (), {})
    assert retried.target.name == "torch-cpu" and retried.explored
    router.observe(retried, 200e-6)  # the second call replaces the first, not averaged with it
    assert router.history.stats[first.key]["torch-cpu"].seconds == pytest.approx(200e-6)
    # NumPy lost its only call too, as the model said it would; for host data it is measured once
    # more all the same (what the program ran before; its only call may have been the first), then no more
    again = router.decide(op, inputs, (), {})
    assert again.target.name == "numpy" and again.explored
    router.observe(again, 2e-3)
    assert router.decide(op, inputs, (), {}).target.name == "torch-cpu"
    assert router.decide(op, inputs, (), {}).target.name == "torch-cpu"


def test_a_device_s_first_call_of_a_kind_is_no_price_and_the_next_runs_there_again(tmp_path, monkeypatch):
    """A device's first call of a kind pays a one-time cost (CuPy compiles a kernel, loads a
    library). Its timing is no price: where the model says the device wins, the next call of the
    kind runs there again and is the one measured, rather than NumPy chosen by its model alone
    (a loop's second pass: its data would cross back)."""
    import fakecupy

    if fakecupy.real_cupy_installed():
        pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules")
    from helpers import fake_cupy_router

    with fake_cupy_router(tmp_path, monkeypatch):
        router.use_calibration(synthetic(gpu=True))
        history = router.ROUTER.history
        monkeypatch.setattr(history, "observe", types.MethodType(History.observe, history))
        monkeypatch.setattr(router, "observe", router.ROUTER.observe)
        op = op_named("matmul")
        a = dispatch.ones((1_024, 1_024))
        inputs = Inputs([a, a], _layout(op, (a, a), {}))
        first = router.decide(op, inputs, (a, a), {})
        assert first.target.name == "cupy" and first.sample
        router.observe(first, 2.0)  # its first call compiled and loaded: slower than NumPy's model
        assert "cupy" not in history.stats.get(first.key, {})
        second = router.decide(op, inputs, (a, a), {})
        assert second.target.name == "cupy" and second.sample
        router.observe(second, first.predicted)
        assert history.stats[first.key]["cupy"].seconds == pytest.approx(first.predicted)
        assert history.stats[first.key]["cupy"].samples == 1
        assert router.decide(op, inputs, (a, a), {}).target.name == "cupy"


def test_numpy_measured_once_on_a_cold_first_call_is_measured_again(isolated):
    """Another target measured faster than NumPy's only call, which was the program's first:
    NumPy is tried once more even where its model says it loses, and its warm call is kept."""
    pytest.importorskip("torch")
    cal = synthetic()
    router.use_calibration(cal)
    op = op_named("sum")
    inputs = _inputs(dispatch.ones(1_000_000))
    model = cost.models_from(cal)["numpy"]
    priced = cost.estimate(model, type("P", (), {"name": "numpy", "device": model.device})(), op, inputs, True)
    ran = {"numpy": [], "torch-cpu": []}
    for _ in range(10):
        d = router.decide(op, inputs, (), {})
        ran[d.target.name].append(d)
        first = len(ran[d.target.name]) == 1
        if d.target.name == "numpy":  # cold on its first call; then under half its model's price
            router.observe(d, 10 * priced if first else 0.2 * priced)
        else:  # its thread pool started on its first call; then faster than NumPy's model says NumPy is
            router.observe(d, 50e-3 if first else 0.5 * priced)
    assert len(ran["numpy"]) >= 2 and ran["numpy"][1].explored
    assert router.history.stats[ran["numpy"][0].key]["numpy"].seconds == pytest.approx(0.2 * priced)


def test_numpy_settled_under_the_threshold_raises_the_floor_over_unmeasured_sizes(isolated):
    pytest.importorskip("torch")
    router.use_calibration(synthetic())
    op = op_named("sum")
    trip = router.trip_floor(op)
    n = 8 * (trip + 1)  # three size buckets over the floor, none measured
    x = dispatch.ones(n)
    first = router.decide(op, _inputs(x), (), {})
    assert first.target.name == "torch-cpu"
    router.observe(first, 5e-3)
    second = router.decide(op, _inputs(x), (), {})
    assert second.target.name == "numpy"
    router.observe(second, 30e-6)
    router.observe(router.decide(op, _inputs(x), (), {}), 5e-3)  # torch-cpu's second try: slow again
    settled = router.decide(op, _inputs(x), (), {})
    assert settled.target.name == "numpy" and not settled.sample
    assert router.trip_floor(op) == (1 << n.bit_length()) - 1  # its size and those under it skip the router
    out = dispatch.sum(x)
    assert float(out) == n


def test_another_target_takes_a_call_from_numpy_only_when_clearly_cheaper(isolated):
    pytest.importorskip("torch")
    router.use_calibration(synthetic())
    op = op_named("sum")
    x = dispatch.ones(1_000_000)
    inputs = Inputs([x], _layout(op, (x,), {}))
    key = router.call_key(op, inputs)
    for _ in range(100):  # measured so often that the model hardly counts
        router.history.observe(key, "numpy", 1.0e-3)
        router.history.observe(key, "torch-cpu", 0.9e-3)
    router.clear_decisions()
    close = router.decide(op, inputs, (), {})
    assert close.target.name == "numpy" and router.KEEP_MARGIN == pytest.approx(0.2)  # 10% is noise
    for _ in range(100):
        router.history.observe(key, "torch-cpu", 0.5e-3)
    router.clear_decisions()
    assert router.decide(op, inputs, (), {}).target.name == "torch-cpu"  # 2x is not
    assert float(dispatch.sum(x)) == 1_000_000.0


def _multiply_over_the_floor() -> tuple:
    """Under a synthetic calibration: multiply, a host array a few size buckets over its
    round-trip floor, and the key of ``x * x``."""
    router.use_calibration(synthetic())
    op = op_named("multiply")
    x = dispatch.ones(4 * (router.trip_floor(op) + 1))
    return op, x, router.call_key(op, Inputs([x, x]))


def test_a_floor_is_learned_where_numpy_keeps_the_calls_within_the_margin(isolated):
    op, x, key = _multiply_over_the_floor()
    for _ in range(8):
        router.history.observe(key, "numpy", 1.0e-3)
        router.history.observe(key, "torch-cpu", 0.9e-3)  # 10% faster: within the margin, NumPy keeps it
    router.ROUTER.learn_floor(key)
    assert router.trip_floor(op) == (1 << x.size.bit_length()) - 1
    out = x * x
    assert out.target == "numpy" and out.dtype == np.float64 and float(out.sum()) == x.size


def test_a_learned_floor_survives_switching_policies_and_back(isolated):
    op, x, key = _multiply_over_the_floor()
    for _ in range(8):
        router.history.observe(key, "numpy", 1.0e-3)
    router.ROUTER.learn_floor(key)
    learned = router.trip_floor(op)
    assert learned == (1 << x.size.bit_length()) - 1
    router.set_policy("seed")
    assert router.trip_floor(op) != learned  # the seed table's floors, not the cost policy's
    router.set_policy("cost")
    assert router.trip_floor(op) == learned  # its cached decisions would not teach it again
    router.clear_decisions()
    assert router.trip_floor(op) < learned  # cleared: learned afresh


def test_a_second_call_for_a_target_that_lost_its_first_is_not_held_back_by_the_exploration_budget():
    from dispatch.routing.history import History

    h = History(explore_budget=0.05)
    key = ("linalg.lstsq", (np.dtype("float64"),), 25, frozenset(), None, None)
    h.observe(key, "cupy", 1.3)  # its first call of the kind built its solver: no price
    assert key not in h.stats
    h.observe(key, "cupy", 0.9)  # a second one-time cost (CuPy: a kernel per dimension count)
    h.observe(key, "numpy", 0.48)
    h.observe(("matmul",), "torch-cpu", 0.13, explored=True)  # another kind's exploration spent the budget
    assert h.explored_s > h.explore_budget * h.measured_s
    assert h.explore(key, [(0.48, "numpy"), (0.9, "cupy")]) is None
    assert h.retry(key, ["cupy"]) == "cupy"
    h.observe(key, "cupy", 0.04, explored=True)
    assert h.stats[key]["cupy"].seconds == pytest.approx(0.04)  # the fastest of its first samples
    assert h.retry(key, ["cupy"]) == "cupy"
    h.observe(key, "cupy", 0.05, explored=True)
    assert h.stats[key]["cupy"].seconds == pytest.approx(0.04)
    assert h.retry(key, ["cupy"]) is None  # measured enough
    h.observe(key, "cupy", 0.06)
    assert h.stats[key]["cupy"].seconds == pytest.approx(0.04 + h.alpha * 0.02)  # then a moving average
    h.observe(key, "torch-cpu", 0.9)  # on the host only the first call pays (a thread pool's start)
    assert h.retry(key, ["torch-cpu"]) == "torch-cpu"
    h.observe(key, "torch-cpu", 0.5)
    assert h.retry(key, ["torch-cpu"]) is None


def test_a_long_host_call_that_lost_by_far_is_not_retried():
    """NumPy's one timing of a 41M-element sine, 0.48 s, against CuPy's 0.04 s: NumPy's one-time
    costs (a cold cache, its pages' first touch) cannot explain the gap, so it is not timed again
    (on the H200 machine a script's third run spent 0.48 s so); a short timing, or a long one
    within ``explore_ratio`` of the best, is; a device's (its first call of the kind in the process
    is no price, and the next may pay another one-time cost), or torch's (its thread pool starts at
    its first call), first timing is retried whatever it lost by."""
    h = History()
    key = ("sin", (np.dtype("float64"),), 26, frozenset({HOST}))
    h.observe(key, "numpy", 0.48)
    assert h.retry(key, ["numpy"], 0.04) is None
    assert h.retry(key, ["numpy"], 0.2) == "numpy"  # within 3x: a first touch of its pages may explain it
    assert h.retry(key, ["numpy"]) == "numpy"  # nothing to compare with
    short = ("sin", (np.dtype("float64"),), 14, frozenset({HOST}))
    h.observe(short, "numpy", 5e-3)  # cold: a thread pool's start, a cold cache
    assert h.retry(short, ["numpy"], 0.25e-3) == "numpy"
    h.observe(key, "cupy", 2.0)  # its first call of the kind loaded its kernel: no price
    h.observe(key, "cupy", 1.3)  # its first call at this size built its solver
    assert h.retry(key, ["cupy"], 0.04) == "cupy"
    h.observe(key, "torch-cpu", 0.48)
    assert h.retry(key, ["torch-cpu"], 0.04) == "torch-cpu"


def test_a_busy_machine_is_named_by_the_calibration(monkeypatch):
    """A measurement whose median batch took far longer than its least was disturbed; over a
    quarter of them disturbed, the calibration says the machine was busy, in one line."""
    monkeypatch.setattr(calibration, "_SPREAD", [0, 0])
    monkeypatch.setattr(calibration, "_LOAD", [0.0])  # not the load an earlier calibration here noted
    calibration._count_spread([1.0, 1.1, 1.2, 1.0, 9.0])  # one stalled batch: the least is kept
    assert calibration._SPREAD == [0, 1] and calibration.busy_note() is None
    calibration._count_spread([1.0, 1.1, 1.6, 2.0, 9.0])  # the median batch 1.6x the least
    assert calibration._SPREAD == [1, 2]
    note = calibration.busy_note()
    assert note is not None and "\n" not in note and "1 of 2 measurements varied over 1.5x" in note
    monkeypatch.setattr(calibration, "_SPREAD", [1, 4])
    assert calibration.busy_note() is None  # a quarter disturbed: steady enough
    # steady batches, but a load average over the cores: every threaded product stalls
    monkeypatch.setattr(calibration.os, "getloadavg", lambda: (13.2, 12.0, 9.0), raising=False)
    monkeypatch.setattr(calibration.os, "cpu_count", lambda: 2)
    calibration.note_load(reset=True)
    note = calibration.busy_note()
    assert note is not None and "its load average reached 13.2 on 2 cores" in note
    monkeypatch.setattr(calibration.os, "getloadavg", lambda: (1.5, 1.0, 1.0), raising=False)
    calibration.note_load(reset=True)
    assert calibration.busy_note() is None  # under one runnable process a core
    monkeypatch.setattr(calibration, "_SPREAD", [0, 0])
    calibration._timer(lambda: None, lambda: None, budget=1e-3)
    assert calibration._SPREAD[1] == 1  # every batched measurement is counted
