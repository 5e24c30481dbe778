"""Recording a region's calls with their data flow (``dispatch.routing.regions``), and the
region the planner gets from recordings of one program under several targets."""

from __future__ import annotations

import numpy
import pytest

import dispatch
from dispatch.routing import planner, regions
from dispatch.routing.planner import HOST

pytest.importorskip("scipy")

N = 200_000


def _program(x):
    y = x * 2.0  # 0: reads the source
    z = dispatch.exp(y[: N // 2])  # 1: a view of y (not a call here), then 2: exp reads y's view
    return float((z + y[N // 2:]).sum())


def test_producers_sources_and_sizes_are_recorded():
    x = dispatch.asarray(numpy.linspace(0.0, 1.0, N))
    with dispatch.using("numpy"), regions.record() as rec:
        got = _program(x)
    want = float((numpy.exp(numpy.linspace(0.0, 1.0, N)[: N // 2] * 2.0)
                  + numpy.linspace(0.0, 1.0, N)[N // 2:] * 2.0).sum())
    assert got == pytest.approx(want, rel=1e-12)
    ops = [c.op for c in rec.calls]
    assert ops[0] == "multiply" and "exp" in ops and ops[-1] == "sum"
    assert rec.sources == [(HOST, x.nbytes)]
    assert rec.calls[0].producers == [(-1, x.nbytes)]  # the source, made before the region
    exp = ops.index("exp")
    (producer, nbytes), = rec.calls[exp].producers
    assert nbytes == x.nbytes // 2
    assert ops[producer] in ("multiply", "__getitem__")  # y, or the view of it that was a call
    assert all(c.place == HOST and c.seconds >= 0.0 for c in rec.calls)
    assert rec.calls[-1].out_bytes == 8


def test_the_region_of_two_host_targets_takes_each_calls_fastest():
    pytest.importorskip("torch")
    x = dispatch.asarray(numpy.linspace(0.0, 1.0, N))
    recs = {}
    for name in ("numpy", "torch-cpu"):
        with dispatch.using(name), regions.record() as rec:
            _program(x)
        recs[name] = rec
    assert [c.op for c in recs["numpy"].calls] == [c.op for c in recs["torch-cpu"].calls]  # the same calls, in order
    region = regions.region_of(recs, lambda a, b, n: 0.0, reference="numpy")
    made = planner.plan(region)
    fastest = sum(min(r.calls[i].seconds for r in recs.values()) for i in range(len(recs["numpy"].calls)))
    assert made.seconds == pytest.approx(fastest, rel=1e-9)
    assert made.seconds <= min(r.seconds() for r in recs.values()) + 1e-12


def test_recordings_of_another_program_make_no_region():
    a, b = regions.Recording(), regions.Recording()
    a.calls.append(regions.Call("add", "numpy", HOST, 1e-3, 0, 8, []))
    b.calls.append(regions.Call("exp", "numpy", HOST, 1e-3, 0, 8, []))
    with pytest.raises(ValueError, match="differ"):
        regions.region_of({"numpy": a, "torch-cpu": b}, lambda s, d, n: 0.0)


def test_a_device_call_is_priced_without_the_copies_it_made():
    host = regions.Recording()
    host.sources.append((HOST, 8_000_000))
    host.calls.append(regions.Call("exp", "numpy", HOST, 4e-3, 0, 8_000_000, [(-1, 8_000_000)]))
    device = regions.Recording()
    device.sources.append((HOST, 8_000_000))
    device.calls.append(regions.Call("exp", "cupy", "cuda:0", 2e-3, 8_000_000, 8_000_000, [(-1, 8_000_000)]))

    def transfer(src, dst, nbytes):
        return 0.0 if src == dst else nbytes / 8e9

    region = regions.region_of({"numpy": host, "cupy": device}, transfer)
    assert region.prices[1] == {HOST: pytest.approx(4e-3), "cuda:0": pytest.approx(1e-3)}
    made = planner.plan(region)  # 1 ms there + 1 ms in + 1 ms back (its result is read on the host) < 4 ms
    assert made.placement[1] == "cuda:0"
    assert made.seconds == pytest.approx(3e-3)


def test_runs_that_differ_by_a_few_calls_are_matched_call_by_call():
    ref = ["multiply", "exp", "sum", "add", "sum", "sqrt"]
    other = ["multiply", "true_divide", "exp", "sum", "add", "sqrt"]  # one call more, one fewer
    assert regions.align(ref, other) == {0: 0, 1: 2, 2: 3, 3: 4, 5: 5}
    assert regions.align(ref, ref) == {i: i for i in range(len(ref))}
