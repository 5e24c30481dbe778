"""Tracing: per-call records, the summary table, JSON, fallbacks reported once,
DISPATCH_TRACE=1, and the OpenTelemetry exporter."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys

import numpy as np
import pytest

import dispatch
from dispatch import tracing


def test_trace_records_each_call():
    x = dispatch.arange(12.0).reshape(3, 4)
    with dispatch.trace() as t:
        y = x.sum(axis=0)
        z = np.linalg.norm(x)
    assert type(y) is dispatch.ndarray and float(z) == pytest.approx(np.linalg.norm(np.arange(12.0)))
    ops = [r.op for r in t.records]
    assert ops == ["sum", "linalg.norm"]
    first = t.records[0]
    assert first.shapes == [[3, 4]] and first.dtypes == ["float64"]
    assert first.target == "numpy" and first.reason and first.seconds > 0


def test_a_trace_leaves_calls_under_the_floors_where_they_run(monkeypatch):
    """Traced, a call under its op's floors still runs on NumPy without asking the router, as
    it does untraced, and the trace says why: tracing must not change what it traces."""
    from dispatch.base.ops import op_named
    from dispatch.routing import router

    exp = op_named("exp")
    monkeypatch.setattr(exp, "floor", 10_000)
    monkeypatch.setattr(exp, "trip_floor", 10_000)
    asked = []
    decide = router.decide
    monkeypatch.setattr(router, "decide", lambda *args: asked.append(args[0].name) or decide(*args))
    xn = np.linspace(0.0, 1.0, 1000)
    x = dispatch.asarray(xn)
    with dispatch.trace() as t:
        y = dispatch.exp(x)
        z = dispatch.exp(x[:100])
        v = x[10:20]
    assert asked == []
    assert [(r.op, r.target, r.reason.split(":")[0]) for r in t.records] == [
        ("exp", "numpy", "floor"), ("__getitem__", "numpy", "local"), ("exp", "numpy", "small"),
        ("__getitem__", "numpy", "local")]
    assert t.records[0].shapes == [[1000]] and t.records[0].dtypes == ["float64"]
    for got, want in ((y, np.exp(xn)), (z, np.exp(xn[:100])), (v, xn[10:20])):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_numpy_trace_keeps_its_meaning():
    x = dispatch.arange(9.0).reshape(3, 3)
    assert dispatch.trace(x) == np.trace(np.arange(9.0).reshape(3, 3))
    assert dispatch.trace(x, offset=1) == 1.0 + 5.0
    assert isinstance(dispatch.trace(), tracing.Trace)


def test_summary_and_json():
    with dispatch.trace() as t:
        for _ in range(3):
            dispatch.ones(10).sum()
    out = io.StringIO()
    assert t.summary(file=out) is None  # printed once, not also returned for a REPL to show again
    text = out.getvalue()
    assert text.startswith("dispatch trace: 6 calls")  # three ones and three sums
    assert "sum" in text and "numpy" in text and "3" in text
    data = json.loads(t.to_json())
    assert [c["op"] for c in data["calls"]].count("sum") == 3
    assert t.by_target()["numpy"] > 0


def test_fallbacks_are_reported_once(caplog):
    with caplog.at_level(logging.INFO, logger="dispatch"), dispatch.trace() as t:
        for _ in range(5):
            np.lib.stride_tricks.sliding_window_view(dispatch.arange(10), 3)
    assert sum("sliding_window_view" in m for m in caplog.messages) <= 1
    counted = [n for (op, _), n in tracing.fallbacks().items() if "sliding_window_view" in op]
    assert counted and counted[0] >= 1
    assert not [w for w in caplog.records if w.levelno >= logging.WARNING]
    assert [r.op for r in t.records].count("numpy.lib.stride_tricks.sliding_window_view") == 5


def test_traces_nest_and_close():
    with dispatch.trace() as outer:
        dispatch.ones(3).sum()
        with dispatch.trace() as inner:
            dispatch.ones(3).mean()
    dispatch.ones(3).max()
    assert [r.op for r in outer.records] == ["ones", "sum", "ones", "mean"]
    assert [r.op for r in inner.records] == ["ones", "mean"]
    assert dispatch.base.state.STATE.tracing == 0 and dispatch.base.state.STATE.plain


def test_dispatch_trace_env_prints_at_exit():
    code = "import dispatch as np; x = np.arange(100.0); print(float(x.sum()))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "DISPATCH_TRACE": "1"}, check=True)
    assert run.stdout.strip() == "4950.0"
    assert "dispatch trace" in run.stderr and "sum" in run.stderr


def test_opentelemetry_spans():
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_opentelemetry(provider.get_tracer("test"))
    try:
        dispatch.arange(5.0).sum()
    finally:
        tracing.use_opentelemetry(False)
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    assert "dispatch.sum" in names
    span = spans[names.index("dispatch.sum")]
    assert span.attributes["dispatch.target"] == "numpy"
    assert span.attributes["dispatch.shapes"] == "[[5]]"
    assert dispatch.base.state.STATE.tracing == 0


def test_aggregated_trace_keeps_one_group_per_distinct_call():
    x = dispatch.ones(10)
    with tracing.trace(aggregate=True) as t:
        for _ in range(50):
            x.sum()
        dispatch.ones(20).sum()
    assert t.records == []
    sums = [g for g in t.grouped() if g.op == "sum"]
    assert sorted((g.shapes, g.calls) for g in sums) == [([[10]], 50), ([[20]], 1)]
    assert all(g.seconds > 0 for g in sums)
    assert {r["op"]: r["calls"] for r in t.rows()}["sum"] == 51
    out = io.StringIO()
    t.summary(file=out)
    assert "52 calls" in out.getvalue().splitlines()[0]  # 51 sums and ones(20)
    assert len(json.loads(t.to_json())["groups"]) == len(t.groups)


def test_call_site_skips_dispatch_and_numpy_by_location(monkeypatch):
    tracing.SITES = True
    try:
        with dispatch.trace() as t:
            dispatch.ones(3).sum()  # this line is the site
        here = f"{__file__}:{sys._getframe().f_lineno - 1}"
        assert [r.site for r in t.records] == [here, here]
        monkeypatch.setattr(tracing, "SITE_FILTER", lambda name: name.endswith("no_such_file.py"))
        with dispatch.trace() as t:
            dispatch.ones(3).sum()
        assert [r.site for r in t.records] == [None, None]
    finally:
        tracing.SITES = False


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _long_trace() -> tracing.Trace:
    t = tracing.Trace()
    reason = "MoE: HIGH on 800,000 elements -> SCALAR: stock scikit-learn, and a long reason after it"
    t.add(tracing.CallRecord("StandardScaler.fit_transform_with_a_long_name", [[20000, 40]], ["float64"],
                             "numpy", reason, 0.0123))
    t.add(tracing.CallRecord("sum", [[10]], ["float64"], "torch-cpu", "cost model", 2e-6, bytes_moved=4096))
    return t


def test_summary_without_a_terminal_keeps_whole_names():
    out = io.StringIO()
    _long_trace().summary(file=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "dispatch trace: 2 calls, 12.30 ms"
    assert lines[1].split() == ["op", "target", "reason", "calls", "time", "moved"]
    assert "StandardScaler.fit_transform_with_a_long_name" in lines[2]
    assert "and a long reason after it" in lines[2] and lines[2].endswith("12.30 ms     0 B")
    assert lines[3].endswith("2.0 µs  4.1 kB") and len(lines) == 4


def test_summary_on_a_terminal_is_drawn_by_rich():
    pytest.importorskip("rich")
    out = _Terminal()
    _long_trace().summary(file=out)
    assert "┏" in out.getvalue() and "dispatch trace: 2 calls" in out.getvalue()


def test_trace_shows_as_an_html_table_and_a_short_repr():
    t = _long_trace()
    t.fallbacks[("exp", "torch-cpu failed <oom>")] += 1
    html = t._repr_html_()
    assert html.startswith("<table><caption>dispatch trace: 2 calls, 12.30 ms</caption>")
    assert html.count("<tr>") == 3
    assert '<td style="text-align:left">StandardScaler.fit_transform_with_a_long_name' in html
    assert '<td style="text-align:right">4.1 kB</td>' in html and "failed &lt;oom&gt; (x1)" in html
    assert repr(t) == "<Trace: 2 calls, 12.30 ms, with fallbacks>"


def test_a_trace_records_the_draws_numpys_generator_makes_unrouted():
    """A draw too small to route, or of a method no device draws, is NumPy's generator's, and
    a trace says so: a Monte Carlo loop's draws are calls of the program like any other."""
    rng = dispatch.random.default_rng(7)
    want = np.random.default_rng(7)
    with dispatch.trace() as t:
        a = rng.normal(0.0, 1.0, 64)
        b = rng.choice(10, 5)
        c = rng.integers(0, 9, size=(3, 4), dtype=np.int32)
    for got, expected in ((a, want.normal(0.0, 1.0, 64)), (b, want.choice(10, 5)),
                          (c, want.integers(0, 9, size=(3, 4), dtype=np.int32))):
        got = np.asarray(got)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    assert [(r.op, r.target, r.dtypes) for r in t.records] == [
        ("random.Generator.normal", "numpy", ["float64"]), ("random.Generator.choice", "numpy", ["int64"]),
        ("random.Generator.integers", "numpy", ["int32"])]
    assert all(r.reason.startswith("host: NumPy's generator") and r.seconds >= 0 for r in t.records)
