"""The placement planner (``dispatch.routing.planner``): exact on small graphs, checked against
every placement by brute force; a region planned once and served from the cache after."""

from __future__ import annotations

import itertools
import math
import random
import sys

import pytest

from dispatch.routing import planner
from dispatch.routing.planner import HOST, Planner, Region, cost_of, plan


def _transfer(rates: dict[tuple[str, str], float]):
    def seconds(src: str, dst: str, nbytes: int) -> float:
        return 1e-5 + nbytes / rates[(src, dst)]
    return seconds


TWO = _transfer({(HOST, "gpu"): 1e9, ("gpu", HOST): 5e8})
THREE = _transfer({(HOST, "gpu"): 1e9, ("gpu", HOST): 5e8, (HOST, "gpu1"): 1e9, ("gpu1", HOST): 5e8,
                   ("gpu", "gpu1"): 4e9, ("gpu1", "gpu"): 4e9})


def _random_region(rng: random.Random, n: int, devices: list[str], transfer) -> Region:
    prices = []
    for _ in range(n):
        p = {HOST: rng.uniform(1e-4, 5e-3)}
        for d in devices:
            if rng.random() < 0.85:  # some calls a device cannot run
                p[d] = p[HOST] * rng.choice([0.05, 0.3, 1.0, 3.0])
        prices.append(p)
    edges = [(j, i, rng.choice([10_000, 1_000_000, 8_000_000])) for i in range(1, n) for j in range(i)
             if rng.random() < 0.3]
    fixed = {}
    if rng.random() < 0.5:
        fixed[0] = HOST  # data made on the host before the region
    if rng.random() < 0.5:
        fixed[n - 1] = HOST  # a read on the host after it
    return Region(prices, edges, transfer, fixed)


def _brute(region: Region, places: list[str]) -> float:
    n = len(region.prices)
    return min(cost_of(region, p) for p in itertools.product(places, repeat=n))


@pytest.mark.parametrize("seed", range(40))
def test_the_cut_is_the_exact_minimum_for_the_host_and_one_device(seed):
    rng = random.Random(seed)
    region = _random_region(rng, rng.randint(2, 9), ["gpu"], TWO)
    made = plan(region)
    assert made.method == "exact cut"
    assert made.seconds == pytest.approx(cost_of(region, made.placement), rel=1e-12)
    assert made.seconds == pytest.approx(_brute(region, [HOST, "gpu"]), rel=1e-6, abs=1e-12)
    assert made.seconds <= made.host_seconds + 1e-12


def _program_like_region(rng: random.Random, n: int) -> Region:
    """A region as programs make them: each call reads one to three of the eight calls before it,
    arrays of 10 kB to 1 MB, data made and read on the host at its ends."""
    prices = []
    for _ in range(n):
        p = {HOST: rng.uniform(1e-4, 5e-3)}
        if rng.random() < 0.85:
            p["gpu"] = p[HOST] * rng.choice([0.05, 0.3, 1.0, 3.0])
        prices.append(p)
    edges = [(j, i, rng.choice([10_000, 100_000, 1_000_000])) for i in range(1, n)
             for j in rng.sample(range(max(0, i - 8), i), min(i, rng.randint(1, 3)))]
    return Region(prices, edges, TWO, {0: HOST, n - 1: HOST})


@pytest.mark.parametrize("seed", range(12))
def test_the_cut_of_a_large_region_is_the_minimum_scipy_finds(seed):
    """Regions of 40-400 calls, past brute force: the cut the planner's maximum flow finds on the
    region's graph has the value of the maximum flow SciPy's compiled solver finds on it (max-flow
    min-cut), exactly, in the graph's whole units; and the plan costs what its placement costs."""
    csgraph = pytest.importorskip("scipy.sparse.csgraph")
    import numpy
    from scipy.sparse import csr_matrix

    rng = random.Random(500 + seed)
    region = _program_like_region(rng, rng.randint(40, 400))
    nodes, edges, s, t = planner._graph(region, "gpu")
    side = planner._source_side(nodes, edges, s, t)
    assert s in side and t not in side
    cut = sum(c for u, v, c in edges if u in side and v not in side)
    assert len({(a, b) for a, b, _ in edges}) == len(edges)  # no pair twice: SciPy sums nothing
    u, v, c = (numpy.array(column) for column in zip(*edges, strict=True))
    graph = csr_matrix((c.astype(numpy.int32), (u, v)), shape=(nodes, nodes))
    assert cut == csgraph.maximum_flow(graph, s, t).flow_value
    made = plan(region)
    assert made.method == "exact cut"
    assert made.seconds == pytest.approx(cost_of(region, made.placement), rel=1e-12)
    assert 0 < made.placement.count("gpu") < len(made.placement)  # a cut through the region, not around it


def test_a_region_is_planned_without_scipy(monkeypatch):
    """The planner needs no SciPy: an install with CuPy or torch alone lacks it."""
    monkeypatch.setitem(sys.modules, "scipy", None)  # ``import scipy`` raises ImportError
    rng = random.Random(7)
    region = _random_region(rng, 8, ["gpu"], TWO)
    made = plan(region)
    assert made.method == "exact cut"
    assert made.seconds == pytest.approx(_brute(region, [HOST, "gpu"]), rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("seed", range(15))
def test_several_devices_are_never_worse_than_the_best_single_cut(seed):
    rng = random.Random(100 + seed)
    region = _random_region(rng, rng.randint(2, 7), ["gpu", "gpu1"], THREE)
    made = plan(region)
    assert made.seconds == pytest.approx(cost_of(region, made.placement), rel=1e-12)
    best = _brute(region, [HOST, "gpu", "gpu1"])
    assert best - 1e-12 <= made.seconds <= best * 1.25 + 1e-9  # refinement: near the optimum on these
    for d in ("gpu", "gpu1"):
        assert made.seconds <= plan(_restricted(region, d)).seconds + 1e-12


def _restricted(region: Region, device: str) -> Region:
    prices = [{p: s for p, s in c.items() if p in (HOST, device)} for c in region.prices]
    return Region(prices, region.edges, region.transfer, region.fixed)


def test_a_copy_read_by_many_calls_is_paid_once():
    # x made on the host, read by ten cheap device calls: one copy, not ten
    prices = [{HOST: 0.0}] + [{HOST: 1e-3, "gpu": 1e-5} for _ in range(10)]
    edges = [(0, i, 8_000_000) for i in range(1, 11)]
    region = Region(prices, edges, TWO, {0: HOST})
    made = plan(region)
    assert made.placement[1:] == ["gpu"] * 10
    assert made.seconds == pytest.approx(10 * 1e-5 + TWO(HOST, "gpu", 8_000_000))


def test_transfers_keep_a_cheap_call_on_the_host():
    # a device 2x faster at a call that reads 8 MB made on the host and whose result is read there
    prices = [{HOST: 0.0}, {HOST: 1e-3, "gpu": 5e-4}, {HOST: 0.0}]
    region = Region(prices, [(0, 1, 8_000_000), (1, 2, 8_000_000)], TWO, {0: HOST, 2: HOST})
    assert plan(region).placement == [HOST, HOST, HOST]


def test_a_call_no_device_runs_stays_on_the_host():
    prices = [{HOST: 1.0}, {HOST: 1.0, "gpu": 1e-6}]
    made = plan(Region(prices, [(0, 1, 10)], TWO))
    assert made.placement[0] == HOST
    assert made.placement[1] == "gpu"


def test_a_region_is_planned_once_and_served_from_the_cache():
    rng = random.Random(7)
    built = []

    def build() -> Region:
        built.append(1)
        return _random_region(rng, 6, ["gpu"], TWO)

    cache = Planner()
    first = cache.plan_for(("kmeans.py:12", "body"), build)
    for _ in range(5):
        assert cache.plan_for(("kmeans.py:12", "body"), build) is first
    assert cache.planned == 1 and len(built) == 1
    assert first.served == 5


def test_a_plan_is_revised_when_measurements_disagree():
    cache = Planner(tolerance=1.5)
    region = Region([{HOST: 1e-3, "gpu": 1e-4}], [], TWO)
    first = cache.plan_for("r", region)
    assert not cache.strays("r", first.seconds * 1.2)  # within the tolerance
    assert cache.plan_for("r", region) is first
    assert cache.strays("r", first.seconds / 3.0) and cache.plan_for("r", region) is first  # (asked, not dropped)
    assert first.region is region  # what it was made for: priced again as measured (``Live._repriced``)
    assert cache.strays("r", first.seconds * 3.0)  # far off: the caller forgets it, planned again next time
    cache.forget("r")
    again = cache.plan_for("r", region)
    assert again is not first and cache.planned == 2


def test_describe_names_the_plan_by_number_and_its_saving():
    """A trace names a plan by the planner's count, not by its key (a region's key spells out
    every call of the region: thousands of characters in a reason)."""
    planner_ = Planner()
    planner_.plan_for(("first",), Region([{HOST: 1.0}], [], TWO))
    made = planner_.plan_for(("a long key",) * 50, Region([{HOST: 1e-2, "gpu": 1e-3}], [], TWO))
    text = planner.describe(made, 0)
    assert text.startswith("plan 2 (exact cut, 1 call): call 0 on gpu") and "save 9 ms" in text
    assert "a long key" not in text and len(text) < 120
    assert math.isclose(made.saving, 1e-2 - 1e-3)
