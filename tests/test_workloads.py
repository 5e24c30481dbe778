"""The workload suite: every program runs and agrees with itself, its ports agree with NumPy,
every checker can fail, and every program reaches arrays through ``xp`` alone.

Small sizes only, except one pass over the generated data of every size (never run).
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import math
import textwrap
import time
import types
from typing import Any

import numpy
import pytest

from benchmarks import workloads
from benchmarks.workloads import __main__ as cli
from benchmarks.workloads import _check, _ports, _timing
from converters import NUMPY_CATALOG

torch = pytest.importorskip("torch")
CPU = torch.device("cpu")
WORKLOADS = [pytest.param(w, id=w.NAME) for w in workloads.WORKLOADS]


@functools.cache
def small(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The small inputs of a workload and its NumPy reference (computed once)."""
    workload = workloads.get(name)
    data = workload.make_data("small")
    return data, workload.run(numpy, **data)


def arrays(data: dict[str, Any]) -> dict[str, numpy.ndarray]:
    return {k: v for k, v in data.items() if isinstance(v, numpy.ndarray)}


# ---- registry and interface -----------------------------------------------------------------


def test_registry():
    names = [w.NAME for w in workloads.WORKLOADS]
    assert len(names) >= 8 and len(set(names)) == len(names)
    cases = list(workloads.iter_cases())
    assert len(cases) == 3 * len(names)
    assert [(w.NAME, s) for w, s in workloads.iter_cases(["small"], ["pca", "heat"])] == [
        ("pca", "small"),
        ("heat", "small"),
    ]
    assert workloads.get("kmeans").NAME == "kmeans"
    with pytest.raises(KeyError, match="no workload"):
        workloads.get("nope")
    with pytest.raises(KeyError, match="no size"):
        list(workloads.iter_cases(["huge"]))


@pytest.mark.parametrize("workload", WORKLOADS)
def test_interface(workload):
    assert tuple(workload.SIZES) == workloads.SIZE_NAMES
    for name in ("make_data", "run", "check", "run_torch", "run_torch_resident", "run_cupy", "run_cupy_resident"):
        assert callable(getattr(workload, name)), name
    params = list(inspect.signature(workload.run).parameters)
    assert params[0] == "xp"
    data = small(workload.NAME)[0]
    assert set(params[1:]) == set(data), "run takes exactly what make_data gives"
    assert all(isinstance(v, (numpy.ndarray, int, float)) for v in data.values())


# ---- the NumPy program ----------------------------------------------------------------------


@pytest.mark.parametrize("workload", WORKLOADS)
def test_numpy_run_is_deterministic_and_passes_its_check(workload):
    _, reference = small(workload.NAME)
    assert reference and all(isinstance(numpy.asarray(v), numpy.ndarray) for v in reference.values())
    again = workload.run(numpy, **workload.make_data("small"))
    workload.check(again, reference)
    for key in reference:
        assert numpy.array_equal(numpy.asarray(again[key]), numpy.asarray(reference[key]), equal_nan=True), key


@pytest.mark.parametrize("workload", WORKLOADS)
def test_run_does_not_mutate_inputs(workload):
    data = workload.make_data("small")
    before = {k: v.copy() for k, v in arrays(data).items()}
    workload.run(numpy, **data)
    for key, value in before.items():
        assert numpy.array_equal(data[key], value), key


def test_other_seeds_give_other_data():
    a, b = workloads.get("kmeans").make_data("small", seed=0), workloads.get("kmeans").make_data("small", seed=1)
    assert not numpy.array_equal(a["X"], b["X"])


def test_sizes_grow_and_large_stays_modest():
    # Generating every large input takes a few seconds; nothing here runs a program.
    for workload in workloads.WORKLOADS:
        totals, nbytes = [], 0
        for size in workloads.SIZE_NAMES:
            data = arrays(workload.make_data(size))
            totals.append(sum(v.size for v in data.values()))
            nbytes = sum(v.nbytes for v in data.values())
            del data
        assert totals[0] < totals[1] < totals[2], (workload.NAME, totals)
        assert nbytes < 1e9, (workload.NAME, nbytes)


# ---- what the programs compute --------------------------------------------------------------


def test_monte_carlo_european_price_matches_black_scholes():
    mc = workloads.get("monte_carlo")
    _, result = small("monte_carlo")
    s, k, r, v, t = (mc.MARKET[key] for key in ("spot", "strike", "rate", "volatility", "maturity"))
    d1 = (math.log(s / k) + (r + v * v / 2) * t) / (v * math.sqrt(t))
    d2 = d1 - v * math.sqrt(t)
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    exact = s * cdf(d1) - k * math.exp(-r * t) * cdf(d2)
    assert abs(float(result["european_price"]) - exact) < 4 * float(result["european_stderr"])
    assert float(result["barrier_price"]) < float(result["european_price"])


def test_fft_filter_matches_direct_convolution():
    data, result = small("fft_filter")
    direct = numpy.convolve(data["signals"][0], data["taps"], mode="same")
    numpy.testing.assert_allclose(result["filtered"][0], direct, atol=1e-12)


def test_least_squares_two_ways_agree_and_kmeans_recovers_blobs():
    _, ls = small("least_squares")
    numpy.testing.assert_allclose(ls["beta_normal"], ls["beta"], rtol=1e-9, atol=1e-9)
    _, km = small("kmeans")
    assert float(km["shifts"][-1]) == 0.0  # converged within the fixed iterations


# ---- the ports ------------------------------------------------------------------------------


@pytest.mark.parametrize("workload", WORKLOADS)
def test_torch_port_matches_numpy(workload):
    data, reference = small(workload.NAME)
    before = {k: v.copy() for k, v in arrays(data).items()}
    workload.check(workload.run_torch(torch, CPU, **data), reference)
    for key, value in before.items():  # on the CPU tensors share memory with the inputs
        assert numpy.array_equal(data[key], value), key


@pytest.mark.parametrize("workload", WORKLOADS)
def test_torch_resident_port_leaves_results_on_the_device(workload):
    port = _ports.Port("torch-cpu", "torch", torch, CPU)
    data, reference = small(workload.NAME)
    out = port.run_resident(workload, port.to_device(data))
    assert all(torch.is_tensor(v) for v in out.values())
    port.synchronize()
    workload.check(port.to_host(out), reference)


class FakeCupy(types.ModuleType):
    """NumPy standing in for CuPy: CuPy's own calls the ports use, then NumPy's namespace."""

    def __init__(self) -> None:
        super().__init__("cupy")
        self.ndarray = numpy.ndarray
        self.synchronized = 0
        device = types.SimpleNamespace(synchronize=self._synchronize)
        self.cuda = types.SimpleNamespace(Device=lambda: device)

    def _synchronize(self) -> None:
        self.synchronized += 1

    def asnumpy(self, x: Any) -> numpy.ndarray:
        assert isinstance(x, numpy.ndarray), "asnumpy takes device arrays only"
        return numpy.array(x)

    def __getattr__(self, name: str) -> Any:
        return getattr(numpy, name)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_cupy_port_with_numpy_standing_in(workload):
    fake = FakeCupy()
    data, reference = small(workload.NAME)
    workload.check(workload.run_cupy(fake, **data), reference)
    port = _ports.Port("cupy", "cupy", fake)
    assert port.supports(workload)
    port.synchronize()
    assert fake.synchronized == 1
    workload.check(port.run(workload, data), reference)


def test_available_ports_lists_torch_cpu_first():
    ports = _ports.available_ports()
    assert ports[0].name == "torch-cpu" and ports[0].device == CPU
    ports[0].synchronize()  # a no-op on the CPU, but it must not fail


# ---- the checkers can fail ------------------------------------------------------------------


def perturb(value: Any, rng: numpy.random.Generator) -> numpy.ndarray:
    """A wrong result: 1e-3 relative noise on floats, one element off by one for integers."""
    x = numpy.array(value, copy=True)
    if x.dtype.kind in "fc":
        noise = 1e-3 * rng.standard_normal(x.shape)
        return (x * (1 + noise) + (x == 0) * 1e-3).astype(x.dtype)
    x.reshape(-1)[0] += 1
    return x


@pytest.mark.parametrize(
    ("workload", "key"),
    [pytest.param(w, key, id=f"{w.NAME}-{key}") for w in workloads.WORKLOADS for key in small(w.NAME)[1]],
)
def test_check_fails_on_a_perturbed_result(workload, key):
    _, reference = small(workload.NAME)
    wrong = dict(reference, **{key: perturb(reference[key], numpy.random.default_rng(1))})
    with pytest.raises(AssertionError):
        workload.check(wrong, reference)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_check_fails_on_a_missing_key_or_a_wrong_dtype(workload):
    _, reference = small(workload.NAME)
    key = next(iter(reference))
    with pytest.raises(AssertionError, match="missing"):
        workload.check({k: v for k, v in reference.items() if k != key}, reference)
    wrong = {k: numpy.asarray(v) for k, v in reference.items()}
    wrong[key] = wrong[key].astype(numpy.float32 if wrong[key].dtype != numpy.float32 else numpy.float64)
    with pytest.raises(AssertionError, match="dtype"):
        workload.check(wrong, reference)


def test_topk_check_forgives_ties_only():
    values = numpy.array([[0.1, 0.2, 0.2, 0.5], [0.1, 0.3, 0.4, 0.9]])
    index = numpy.array([[7, 3, 4, 1], [2, 5, 6, 8]])
    swapped = index.copy()
    swapped[0, [1, 2]] = swapped[0, [2, 1]]  # tied values: either order is right
    assert _check.assert_topk("t", swapped, index, values, values).tolist() == [True, False]
    last = index.copy()
    last[1, 3] = 9  # the last rank's competitor is not returned: a same-valued stand-in is fine
    assert _check.assert_topk("t", last, index, values, values).tolist() == [False, True]
    wrong = index.copy()
    wrong[1, [0, 1]] = wrong[1, [1, 0]]
    with pytest.raises(AssertionError, match="untied"):
        _check.assert_topk("t", wrong, index, values, values)


def test_assert_close_tolerance_is_by_dtype_and_scale():
    ref = numpy.array([1.0, 1e-20, -3.0])
    _check.assert_close("x", ref + 1e-12, ref)  # rounding-sized differences pass, near-zeros too
    with pytest.raises(AssertionError, match="rtol=1e-09"):
        _check.assert_close("x", ref * (1 + 1e-6), ref)
    ref32 = ref.astype(numpy.float32)
    _check.assert_close("x", ref32 * numpy.float32(1 + 1e-6), ref32)
    with pytest.raises(AssertionError, match="non-finite"):
        _check.assert_close("x", numpy.array([1.0, numpy.nan, -3.0]), ref)
    with pytest.raises(AssertionError, match="shape"):
        _check.assert_close("x", ref[:2], ref)


# ---- the programs reach arrays only through xp ----------------------------------------------

FORBIDDEN_ATTRIBUTES = {"get", "numpy", "cpu", "cuda", "to", "detach", "tolist", "item"}


@pytest.mark.parametrize("workload", WORKLOADS)
def test_run_names_no_array_library_but_xp(workload):
    tree = ast.parse(textwrap.dedent(inspect.getsource(workload.run)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            bound = getattr(workload, node.id, None)
            if isinstance(bound, types.ModuleType):
                assert bound.__name__ == "math", f"run uses module {bound.__name__} as {node.id!r}"
            assert node.id not in {"numpy", "np", "torch", "cupy", "cp"}, node.id
        if isinstance(node, ast.Attribute):
            assert node.attr not in FORBIDDEN_ATTRIBUTES, f"run calls .{node.attr}"


class Recorder:
    def __init__(self) -> None:
        self.depth = 0
        self.names: set[str] = set()
        self.foreign: list[str] = []


class Traced(numpy.ndarray):
    """An array that notices NumPy functions applied to it from outside the namespace."""

    recorder: Recorder

    def __array_function__(self, func, types, args, kwargs):
        if not Traced.recorder.depth:
            Traced.recorder.foreign.append(f"{func.__module__}.{func.__name__}")
        return super().__array_function__(func, types, args, kwargs)


def traced(result: Any) -> Any:
    if isinstance(result, numpy.ndarray) and not isinstance(result, Traced):
        return result.view(Traced)
    if isinstance(result, tuple):
        items = [traced(item) for item in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    return result


class RecordingNamespace:
    """Forwards to NumPy, records each function's name, and wraps results as ``Traced``."""

    def __init__(self, target: types.ModuleType, recorder: Recorder, prefix: str = "") -> None:
        self._target, self._recorder, self._prefix = target, recorder, prefix

    def __getattr__(self, name: str) -> Any:
        obj, path, recorder = getattr(self._target, name), self._prefix + name, self._recorder
        if isinstance(obj, types.ModuleType):
            return RecordingNamespace(obj, recorder, path + ".")
        recorder.names.add(path)
        if isinstance(obj, type) or not callable(obj):
            return obj

        def call(*args: Any, **kwargs: Any) -> Any:
            recorder.depth += 1
            try:
                return traced(obj(*args, **kwargs))
            finally:
                recorder.depth -= 1

        return call


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_call_goes_through_xp_and_is_routable(workload):
    data, reference = small(workload.NAME)
    recorder = Recorder()
    Traced.recorder = recorder
    result = workload.run(RecordingNamespace(numpy, recorder), **data)
    foreign = list(recorder.foreign)
    assert not foreign, f"NumPy functions called outside xp: {foreign}"
    workload.check(result, reference)
    assert recorder.names
    for name in sorted(recorder.names):
        if isinstance(getattr(numpy, name, None), type):
            continue  # a dtype passed as an argument
        entry = NUMPY_CATALOG.get(name)
        assert entry is not None, f"xp.{name} is not in the NumPy catalog: dispatch cannot route it"
        # The CuPy port is the program itself: each call must exist in CuPy under its name.
        assert entry.counterparts.get("cupy") == name, f"xp.{name} has no CuPy counterpart of that name"


# ---- the command line and the timer ---------------------------------------------------------


def test_cli_runs_checks_and_prints_a_table(tmp_path, capsys):
    out = tmp_path / "times.json"
    assert cli.main(["--only", "heat", "monte_carlo", "--repeats", "1", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("| workload | size | numpy ms | torch-cpu ms")
    assert [line.split("|")[1].strip() for line in lines[3:]] == ["heat", "monte_carlo"]
    saved = json.loads(out.read_text())
    assert {case["workload"] for case in saved["cases"]} == {"heat", "monte_carlo"}
    assert all(len(case["seconds"]["numpy"]) == 1 for case in saved["cases"])


class CorruptingCupy(FakeCupy):
    def asnumpy(self, x: Any) -> numpy.ndarray:
        return perturb(x, numpy.random.default_rng(2))


def test_cli_reports_a_port_that_disagrees_with_numpy(monkeypatch, capsys):
    fakes = [_ports.Port("cupy", "cupy", FakeCupy()), _ports.Port("cupy-bad", "cupy", CorruptingCupy())]
    monkeypatch.setattr(_ports, "available_ports", lambda: fakes)
    assert cli.main(["--only", "heat", "--repeats", "1"]) == 1
    captured = capsys.readouterr()
    header, _, row = captured.out.splitlines()[1:4]
    assert "cupy rt ms | cupy res ms | cupy-bad rt ms | cupy-bad res ms" in header
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert cells[-2:] == ["FAIL", "FAIL"] and "FAIL" not in cells[:-2]
    assert "FAIL heat small cupy-bad: u:" in captured.err


def test_measure_warms_up_synchronises_and_repeats():
    calls, syncs = [], []
    times = _timing.measure(lambda: calls.append(1), lambda: syncs.append(1), warmup=2, repeats=4)
    assert len(times) == 4 and len(calls) == 6
    assert len(syncs) == 2 + 2 * 4  # after each warm-up, around each timed call
    assert _timing.median([3.0, 1.0, 2.0]) == 2.0


def test_cpu_clock_times_host_ports_only(monkeypatch, capsys):
    fakes = [_ports.Port("torch-cpu", "torch", torch, CPU), _ports.Port("cupy", "cupy", FakeCupy())]
    monkeypatch.setattr(_ports, "available_ports", lambda: fakes)
    assert cli.main(["--only", "heat", "--repeats", "1", "--clock", "cpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("ports: torch-cpu; clock: cpu")
    assert lines[1] == "| workload | size | numpy ms | torch-cpu ms |"
    assert len(_timing.measure(lambda: sum(range(1000)), clock="cpu", repeats=2)) == 2


def test_measure_interleaved_takes_turns():
    order = []
    times = _timing.measure_interleaved(
        {"a": (lambda: order.append("a"), None), "b": (lambda: order.append("b"), None)}, warmup=1, repeats=3
    )
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b"]  # a warm-up, then each round one further along
    assert [len(t) for t in times.values()] == [3, 3]


def test_suite_rounds_give_each_mode_each_place(monkeypatch):
    from benchmarks import suite

    order = []
    monkeypatch.setattr(suite, "_prepare", lambda mode: None)
    runners = {m: (lambda m=m: order.append(m)) for m in ("numpy", "router", "seed")}
    times, kernel = suite._interleaved(runners, warmup=0, repeats=3)
    assert order == ["numpy", "router", "seed", "router", "seed", "numpy", "seed", "numpy", "router"]
    assert {m: len(t) for m, t in times.items()} == {"numpy": 3, "router": 3, "seed": 3}
    assert {m: len(k) for m, k in kernel.items()} == {"numpy": 3, "router": 3, "seed": 3}


def test_each_round_of_a_short_program_opens_after_an_untimed_numpy_sample(monkeypatch):
    """A round's first mode would always follow the same last one of the round before: for a
    program of several runs a sample, each round opens after an untimed sample of NumPy instead.
    A program of one run a sample has no separator."""
    from benchmarks import suite

    monkeypatch.setattr(suite, "_prepare", lambda mode: None)
    clock, order = [0.0], []
    monkeypatch.setattr(suite.time, "perf_counter", lambda: clock[0])

    def run(mode: str, seconds: float) -> Any:
        return lambda: order.append(mode) or clock.__setitem__(0, clock[0] + seconds)

    runners = {"router": run("router", 1.0), "numpy": run("numpy", 2.0)}
    times, _ = suite._interleaved(runners, warmup=0, repeats=2, loops=2)
    assert order == ["numpy"] * 2 + ["router"] * 2 + ["numpy"] * 2 + ["numpy"] * 2 + ["numpy"] * 2 + ["router"] * 2
    assert times == {"router": [1.0, 1.0], "numpy": [2.0, 2.0]}  # the separators untimed
    order.clear()
    suite._interleaved(runners, warmup=0, repeats=2, loops=1)
    assert order == ["router", "numpy", "numpy", "router"]


def test_suite_samples_give_the_time_in_the_kernel(monkeypatch):
    """Each sample's time in the kernel (per run) is kept beside its time; a case over 1.05x
    NumPy's time is reported with both modes' kernel time."""
    from benchmarks import suite

    assert 0.0 <= suite._kernel_seconds() <= time.process_time() + 0.01  # the process's own, so far
    system = [0.0]
    monkeypatch.setattr(suite, "_kernel_seconds", lambda: system[0])
    monkeypatch.setattr(suite, "_prepare", lambda mode: None)

    def faulting(seconds: float) -> Any:
        return lambda: system.__setitem__(0, system[0] + seconds)

    _, kernel = suite._interleaved({"numpy": faulting(0.2), "router": faulting(0.9)}, warmup=1, repeats=2, loops=2)
    assert kernel == {"numpy": [pytest.approx(0.2)] * 2, "router": [pytest.approx(0.9)] * 2}  # per run, after warm-up
    case = {"workload": "pairwise", "size": "large", "checks": {"numpy": "ok"}, "numpy_us_per_call": 50.0,
            "seconds": {"numpy": 0.7, "router": 1.4}, "kernel_seconds": {"numpy": 0.25, "router": 0.004}}
    lines = suite.report([case], ("numpy", "router"))
    assert ("over 1.05x NumPy's time, with each one's time in the kernel a run (NumPy / router): "
            "pairwise large 2.00x (250 ms / 4.00 ms)") in lines


@pytest.mark.parametrize("count", [2, 5, 6, 7])
def test_rounds_are_balanced_in_place_and_in_what_runs_before(count):
    """Over a Williams design's rounds (twice the count where it is odd) each contender runs
    equally often in each place and right after each other one; with seven, the first seven
    rounds put each in each place once, and none after the same one more than twice."""
    from collections import Counter
    from itertools import pairwise

    names = [f"m{k}" for k in range(count)]
    rounds = [_timing.turns(names, i) for i in range(2 * count if count % 2 else count)]
    assert all(sorted(r) == names for r in rounds)
    places = Counter((name, place) for r in rounds for place, name in enumerate(r))
    after = Counter(pair for r in rounds for pair in pairwise(r))
    assert len(places) == count * count and len(set(places.values())) == 1
    assert len(after) == count * (count - 1) and len(set(after.values())) == 1
    first = [_timing.turns(names, i) for i in range(count)]
    assert len(Counter((name, place) for r in first for place, name in enumerate(r))) == count * count
    assert max(Counter(pair for r in first for pair in pairwise(r)).values()) <= 2


def test_suite_reports_the_spread_of_numpy_against_itself():
    from benchmarks import suite

    case = {"workload": "pca", "size": "small", "checks": {"numpy": "ok"}, "numpy_us_per_call": 50.0,
            "seconds": {"numpy": 0.002, "router": 0.0021, "numpy-again": 0.0022}}
    other = dict(case, workload="heat", seconds={"numpy": 0.004, "router": 0.004, "numpy-again": 0.0038})
    lines = suite.report([case, other], ("numpy", "router", "numpy-again"))
    assert "numpy-again / numpy, the measurement's own spread: 0.950 (heat small) to 1.100 (pca small)" in lines
    data, reference = small("pca")
    result = suite._runner("numpy-again", workloads.get("pca"), data, None)()
    assert all(type(v) is type(reference[k]) for k, v in result.items())  # NumPy's own, not dispatch's


def test_the_suite_routes_by_a_full_calibration(tmp_path, monkeypatch):
    """The router is judged on a full calibration: a stored quick one (which a first routed call
    measures) is measured again in full, a stored full one is used as it is."""
    from helpers import router_restored

    from benchmarks import suite
    from dispatch import measure
    from dispatch.routing import calibration, router
    from dispatch.routing.history import History

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    calibration._loaded.clear()
    measured = []

    def calibrate(quick: bool = False, progress: bool = True, **kwargs: Any) -> calibration.Calibration:
        measured.append(quick)
        cal = calibration.Calibration(fingerprint=calibration.fingerprint(), machine={}, quick=quick,
                                      targets={"numpy": {"ops": {}}})
        cal.save()
        calibration._loaded.clear()
        return cal

    monkeypatch.setattr(measure, "calibrate", calibrate)
    try:
        with router_restored(History()):
            calibrate(quick=True)  # what a first routed call stores
            assert suite.full_calibration().quick is False and measured == [True, False]
            assert suite.full_calibration().quick is False and measured == [True, False]  # stored: kept
            assert router.policy() == "cost"
    finally:
        calibration._loaded.clear()  # the fakes are this machine's fingerprint's: no later test reads them


def test_suite_reports_the_ratio_to_numpy_round_by_round():
    """Each round's samples are taken back to back: the median of each round's ratio, not the
    ratio of each mode's median, which a drift shared by a round's modes moves."""
    from benchmarks import suite

    samples = {"numpy": [1.0, 2.0, 3.0], "router": [1.1, 1.9, 3.3], "numpy-again": [1.0, 2.1, 3.0]}
    case = {"workload": "pca", "size": "small", "checks": {"numpy": "ok"}, "numpy_us_per_call": 50.0,
            "seconds": {m: sorted(v)[1] for m, v in samples.items()}, "samples": samples}
    assert suite.paired(case, "router") == pytest.approx(1.1) and case["seconds"]["router"] / 2.0 == 0.95
    assert suite.paired(case, "seed") is None and suite.paired({"seconds": {}}, "router") is None
    light = dict(case, workload="heat", numpy_us_per_call=5.0, samples=dict(samples, router=[2.0, 4.0, 6.0]))
    lines = suite.report([case, light], ("numpy", "router", "numpy-again"))
    assert ("router / numpy round by round (the median of each round's ratio), worst among programs with ops over "
            "20 µs: 1.100 (pca small, 95 % interval 0.950-1.100); numpy-again so, every program: 1.000 to 1.000"
            ) in lines
    # the 2-core machine's bar counts every program, those of calls under 20 µs too
    assert ("router / numpy round by round, worst of every program: 2.000 (heat small, 95 % interval 2.000-2.000)"
            ) in lines


def test_the_interval_of_the_ratio_narrows_with_rounds():
    """The bootstrap interval holds the median, stays within the rounds' ratios, and is as wide as
    the rounds leave it: the same spread over three times the rounds gives a narrower one."""
    from benchmarks import suite

    def case(ratios):
        return {"samples": {"numpy": [1.0] * len(ratios), "router": list(ratios)}}

    spread = [0.96, 1.0, 1.01, 1.02, 1.03, 1.04, 1.09]
    low, high = suite.paired_interval(case(spread), "router")
    assert min(spread) <= low < suite.paired(case(spread), "router") == 1.02 < high <= max(spread)
    low3, high3 = suite.paired_interval(case(spread * 3), "router")
    assert high3 - low3 < high - low and low <= low3 <= 1.02 <= high3 <= high
    assert suite.paired_interval(case([1.1] * 5), "router") == (1.1, 1.1)
    assert suite.paired_interval(case([1.1]), "router") is None and suite.paired_interval({}, "router") is None


def test_the_suite_lets_the_router_learn_until_it_settles(monkeypatch):
    """The router's mode runs the program until, for a few runs in a row, no cached decision
    changes; the report says how long that took, and names a case that did not settle."""
    from benchmarks import suite
    from dispatch.routing import router

    # each run: what it did to a cached decision (dropped to be decided afresh: a change only if
    # decided otherwise)
    script = iter(["numpy", None, "drop", "cupy", "drop", "cupy", None, None, None, None])
    runs = []

    def run():
        decided = next(script)
        runs.append(decided)
        if decided == "drop":
            router.ROUTER.decisions.pop(("b",))
        elif decided:
            router.ROUTER.decisions[("b",)] = types.SimpleNamespace(target=types.SimpleNamespace(name=decided))

    monkeypatch.setattr(router.ROUTER, "decisions", {})
    learned = suite._learn_router(run, quiet_runs=3, quiet_s=0.0)
    assert learned["settled"] and learned["runs"] == 7  # changed at the 1st and 4th: quiet from the 5th to the 7th
    flips = iter(["numpy", "cupy"] * 3)
    assert suite._learn_router(lambda: router.ROUTER.decisions.update(
        {("c",): types.SimpleNamespace(target=types.SimpleNamespace(name=next(flips)))}), limit=3) == {
        "runs": 3, "seconds": pytest.approx(0.0, abs=5.0), "settled": False}
    case = {"workload": "pca", "size": "small", "checks": {"numpy": "ok"}, "numpy_us_per_call": 50.0,
            "seconds": {"numpy": 0.002, "router": 0.002}, "learning": {"router": dict(learned, seconds=0.3)}}
    other = dict(case, size="medium", learning={"router": {"runs": 400, "seconds": 15.2, "settled": False}})
    lines = suite.report([case, other], ("numpy", "router"))
    assert any(line.startswith("router learning before timing: 15.5 s in all, at most 400 runs (pca medium); "
                               "not settled: pca medium") for line in lines)


def test_each_dispatch_mode_of_the_suite_keeps_its_own_history(monkeypatch):
    """The seed table's and the forced GPU's calls teach the router's history nothing: each
    dispatch mode runs with its own, the router with the one dispatch loaded; NumPy's and the
    port's leave the history in place."""
    from benchmarks import suite
    from dispatch.routing import router

    loaded = router.history
    monkeypatch.setattr(suite, "_histories", {})
    monkeypatch.setattr(router.ROUTER, "history", loaded)
    policies = []
    monkeypatch.setattr(router, "set_policy", policies.append)  # (no calibration here: the policy is not the point)
    seen = {}
    for mode in ("router", "seed", "numpy", "always-gpu", "oracle", "router", "port", "seed"):
        suite._prepare(mode)
        seen.setdefault(mode, []).append(router.history)
    assert policies == ["cost", "seed", "cost", "cost", "oracle", "cost", "cost", "seed"]
    assert seen["router"] == [loaded, loaded] and seen["port"] == [loaded]  # (after the router's)
    assert seen["numpy"] == [seen["seed"][0]]  # (after the seed's)
    assert seen["seed"][0] is seen["seed"][1]
    assert len({id(seen[m][0]) for m in ("router", "seed", "always-gpu", "oracle")}) == 4


def test_the_suite_reports_what_the_routers_decisions_did_while_timed(monkeypatch):
    from benchmarks import suite
    from dispatch.routing import router

    target = types.SimpleNamespace

    def key(name: str, forced: str | None = None) -> tuple:  # the router's: op, dtypes, size, devices, forced, layout
        return (name, (), 1, "host", forced, None)

    monkeypatch.setitem(router.ROUTER.caches, "cost", {key("a"): target(target=target(name="numpy")),
                                                 key("b"): target(target=target(name="cupy"))})
    before = suite._router_state()
    assert suite._router_changes(before) == {"decisions_changed": 0, "decisions_new": 0}
    router.ROUTER.caches["cost"][key("a")] = target(target=target(name="cupy"))
    router.ROUTER.caches["cost"][key("c")] = target(target=target(name="numpy"))
    router.ROUTER.caches["cost"][key("d", "cupy")] = target(target=target(name="cupy"))  # forced: not the router's
    del router.ROUTER.caches["cost"][key("b")]
    timing = suite._router_changes(before)
    assert timing == {"decisions_changed": 1, "decisions_new": 1}
    case = {"workload": "pca", "size": "small", "checks": {"numpy": "ok"}, "numpy_us_per_call": 50.0,
            "seconds": {"numpy": 0.002, "router": 0.002},
            "learning": {"router": {"runs": 10, "seconds": 0.3, "settled": True, "timing": timing}}}
    lines = suite.report([case], ("numpy", "router"))
    assert "router while timed: pca small (decisions_changed 1, decisions_new 1)" in lines


def test_the_suite_records_where_a_traced_router_run_ran(monkeypatch):
    import dispatch
    from benchmarks import suite

    prepared = []
    monkeypatch.setattr(suite, "_prepare", prepared.append)  # the router's policy needs a calibration
    a = numpy.arange(6.0)

    def run() -> dict:
        x = dispatch.asarray(a)
        with dispatch.using("numpy"):
            y = dispatch.sqrt(x * 2.0)
        return {"y": y.sum()}

    used, off = suite._targets_used(run)
    assert prepared == ["router"]
    assert sum(used.values()) == 4 and used["numpy"] >= 2  # asarray, multiply, sqrt (numpy), sum
    assert set(used) <= set(dispatch.targets.available())
    assert sum(off.values()) == sum(n for name, n in used.items() if name != "numpy")


def test_the_suite_says_which_calls_ran_off_numpy_and_why(monkeypatch):
    import dispatch
    from benchmarks import suite

    pytest.importorskip("torch")
    monkeypatch.setattr(suite, "_prepare", lambda mode: None)
    a = numpy.arange(6.0).reshape(2, 3)

    def run() -> dict:
        x = dispatch.asarray(a)
        with dispatch.using("torch-cpu"):
            y = dispatch.sqrt(x)
        return {"y": y.sum()}

    used, off = suite._targets_used(run)
    assert used["torch-cpu"] == 1
    assert off == {"sqrt 2x3 float64: torch-cpu, forced torch-cpu": 1}


def test_short_programs_take_more_samples():
    from benchmarks import suite

    assert suite._repeats(7, run_s=2.0) == 7  # a long program: as asked
    assert suite._repeats(7, run_s=0.08) == suite.SHORT_REPEATS > 7  # a medium one, one run a sample
    assert suite._repeats(7, run_s=0.002) == suite.TINY_REPEATS > suite.SHORT_REPEATS  # a small one, many runs a sample
    assert suite._repeats(suite.TINY_REPEATS + 5, run_s=0.002) == suite.TINY_REPEATS + 5
    assert suite._loops(0.002) == 25 and suite._loops(0.08) == 1 and suite._loops(1e-9) == 1000


@pytest.mark.parametrize("workload", WORKLOADS)
def test_a_stamped_program_computes_what_it_did_and_times_each_statement(workload):
    """``benchmarks.statements`` recompiles ``run`` with a clock after each statement: the same
    results, and a time for every statement, those in its loops included."""
    from benchmarks import statements

    run, seconds, labels = statements.stamped(workload)
    data = workload.make_data("small")
    workload.check(run(numpy, **data), workload.run(numpy, **data))
    body = ast.parse(textwrap.dedent(inspect.getsource(workload.run))).body[0].body
    assert labels[0] == ast.unparse(body[0]).splitlines()[0]
    assert labels[-1].startswith("return ") and len(labels) >= len(body)
    assert len(seconds) == len(labels) and all(s > 0.0 for s in seconds)


def test_statements_reports_both_modes_for_every_line():
    from benchmarks import statements

    result = statements.measure("fft_filter", "small", rounds=4)
    assert result["learning"]["runs"] >= 1 and result["rounds"] == 4
    assert result["numpy_s"] > 0.0 and result["dispatch_s"] > 0.0 and result["paired"] > 0.0
    lines = [st["line"] for st in result["statements"]]
    assert lines[0].startswith("x, h = ") and lines[-1].startswith("return {")
    text = statements.report(result)
    assert "dispatch / NumPy" in text and all(line[:40] in text for line in lines)
