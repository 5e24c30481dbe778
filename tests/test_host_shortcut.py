"""The host shortcut: one rule (``_call.host_shortcut``) says when a call on host data runs
straight on NumPy, and the compiled path implements exactly it. Each case runs on both paths
(``_compiled.python_path``) and must ask the router the same way, with NumPy's result."""

from __future__ import annotations

import numpy as np
import pytest

import dispatch
from dispatch.arrays import _call, _compiled
from dispatch.base.ops import all_ops
from dispatch.routing import router

FLOOR, TRIP = 64, 256  # the floors every op is given here

CALLS = {
    "a + b": (lambda xp, a, b: a + b),
    "a + 2.0": (lambda xp, a, b: a + 2.0),
    "2.0 * a": (lambda xp, a, b: 2.0 * a),
    "a / np.float64": (lambda xp, a, b: a / np.float64(3.0)),
    "a.sum()": (lambda xp, a, b: a.sum()),
    "a.max(axis=0)": (lambda xp, a, b: a.max(axis=0)),
    "xp.exp(a)": (lambda xp, a, b: xp.exp(a)),
    "np.exp(a)": (lambda xp, a, b: np.exp(a)),
    "xp.maximum(a, b)": (lambda xp, a, b: xp.maximum(a, b)),
    "xp.concatenate([a, b])": (lambda xp, a, b: xp.concatenate([a, b])),
}
SIZES = (FLOOR - 1, FLOOR, FLOOR + 1, TRIP, TRIP + 1)


@pytest.fixture
def floors(monkeypatch, tmp_path):
    from helpers import router_restored

    from dispatch.routing.history import History

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    with router_restored(History(explore_probability=0.0)):
        for op in all_ops():
            monkeypatch.setattr(op, "floor", FLOOR)
            monkeypatch.setattr(op, "trip_floor", TRIP)
        yield


def _asked(monkeypatch, program, *args) -> tuple[bool, object]:
    """Whether the call asked the router (the memo emptied first, so that nothing serves it from
    there), and its result."""
    asked = []
    decide = router.decide
    monkeypatch.setattr(router, "decide", lambda *a: asked.append(1) or decide(*a))
    router.ROUTER.memo.clear()
    result = program(*args)
    monkeypatch.setattr(router, "decide", decide)
    return bool(asked), result


def _both_paths(monkeypatch, program, xp_args, np_args) -> bool:
    from helpers import assert_same

    want = program(np, *np_args)
    compiled, got = _asked(monkeypatch, program, dispatch, *xp_args)
    assert_same(got, want)
    with _compiled.python_path():
        python, got = _asked(monkeypatch, program, dispatch, *xp_args)
    assert_same(got, want)
    assert compiled == python, f"compiled path asked the router: {compiled}, Python path: {python}"
    return python


@pytest.mark.parametrize("label", CALLS)
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_both_paths_take_the_host_shortcut_alike(label, dtype, floors, monkeypatch):
    program = CALLS[label]
    for n in SIZES:
        an = np.arange(n, dtype=dtype) + 1
        bn = an[::-1].copy()
        a, b = dispatch.asarray(an), dispatch.asarray(bn)
        _set_floors()
        shortcut = _call.host_shortcut(_op(label), n)  # (n: the largest array's size)
        assert shortcut == (n <= TRIP)
        asked = _both_paths(monkeypatch, program, (a, b), (an, bn))
        assert asked == (not shortcut), (label, n)


def _set_floors() -> None:
    for op in all_ops():  # (as the fixture left them: a call the router decides may compute them anew)
        op.floor, op.trip_floor = FLOOR, TRIP


def _op(label: str):
    from dispatch.base.ops import op_named

    name = {"+": "add", "*": "multiply", "/": "true_divide", "sum": "sum", "max": "max", "exp": "exp",
            "maximum": "maximum", "concatenate": "concatenate"}
    return op_named(next(v for k, v in name.items() if k in label))


@pytest.mark.parametrize("label", ["a + b", "a.sum()", "xp.exp(a)"])
def test_a_forced_target_or_strict_mode_decides_alike_on_both_paths(label, floors, monkeypatch):
    program = CALLS[label]
    an = np.linspace(0.0, 1.0, FLOOR - 1)
    a, b = dispatch.asarray(an), dispatch.asarray(an[::-1].copy())
    with dispatch.using("numpy"):  # forced: the router decides every call
        assert _both_paths(monkeypatch, program, (a, b), (an, an[::-1].copy()))
    router.set_exact(True)
    try:  # strict mode: the shortcut still runs NumPy, as the router would
        assert not _both_paths(monkeypatch, program, (a, b), (an, an[::-1].copy()))
    finally:
        router.set_exact(False)


def test_a_device_operand_takes_no_shortcut_on_either_path(floors, monkeypatch):
    pytest.importorskip("dask.array")
    an = np.linspace(0.0, 1.0, 8)
    a = dispatch.asarray(an)
    try:
        d = a.to("dask")
    except Exception as exc:  # no Dask target here
        pytest.skip(str(exc))
    assert _both_paths(monkeypatch, lambda xp, x, y: x + y, (a, d), (an, an))


# ---- the compiled memo serves through the router's epoch, never a private name ----


@pytest.mark.skipif(not _compiled.ACTIVE, reason=f"the compiled fast path is {_compiled.STATUS}")
def test_the_compiled_path_serves_memoized_calls(monkeypatch, tmp_path):
    """A host call over the floors that the router keeps on NumPy is served by the compiled
    memo on its repeats (counted by the extension), until the router's epoch moves."""
    from helpers import every_call_routed

    with every_call_routed(monkeypatch, tmp_path):
        a = dispatch.asarray(np.linspace(0.0, 1.0, 30))
        a + 1.0  # decided, and remembered
        before = _compiled.memo_served()
        for _ in range(5):
            a + 1.0
        assert _compiled.memo_served() - before == 5
        router.ROUTER.changed()  # a decision or a trial changed: the Python path checks the entry again
        before = _compiled.memo_served()
        a + 1.0
        assert _compiled.memo_served() == before
        a + 1.0  # checked, and served again
        assert _compiled.memo_served() == before + 1


@pytest.mark.skipif(not _compiled.ACTIVE, reason=f"the compiled fast path is {_compiled.STATUS}")
def test_the_memo_serves_no_call_while_numpy_is_forced_for_the_process(monkeypatch, tmp_path):
    """An entry the memo made under routing (its key: no target forced) serves no call once NumPy
    is forced for the process: NumPy runs each, and the memo serves again once routing is back."""
    from helpers import every_call_routed

    with every_call_routed(monkeypatch, tmp_path):
        an = np.linspace(0.0, 1.0, 30)
        a = dispatch.asarray(an)
        a + 1.0  # decided, and remembered
        a + 1.0
        dispatch.set_backend("numpy")
        try:
            before = _compiled.memo_served()
            for _ in range(5):
                got = a + 1.0
            assert _compiled.memo_served() == before
            np.testing.assert_array_equal(np.asarray(got), an + 1.0)
        finally:
            dispatch.set_backend("auto")
        a + 1.0  # (checked again at the router's epoch)
        before = _compiled.memo_served()
        a + 1.0
        assert _compiled.memo_served() == before + 1


@pytest.mark.skipif(not _compiled.ACTIVE, reason=f"the compiled fast path is {_compiled.STATUS}")
def test_binding_a_router_without_its_memo_or_epoch_fails_loudly():
    class Renamed:
        __slots__ = ("entries", "epoch")

    with pytest.raises(AttributeError, match="memo"):
        _compiled.bind_router(Renamed(), router.Decision, router.SETTLED_EVERY, _call._INTO, _call.FFT_PADDED)


@pytest.mark.parametrize("label", ["a + b", "a.sum()", "xp.exp(a)", "xp.concatenate([a, b])"])
def test_numpy_forced_for_the_process_takes_the_shortcut_at_every_size(label, floors, monkeypatch):
    """``set_backend("numpy")`` (as ``DISPATCH_BACKEND=numpy``) runs every host call on NumPy
    without asking the router, on both paths, over the floors too; a ``using`` block still asks it
    (the previous test)."""
    program = CALLS[label]
    an = np.linspace(0.0, 1.0, TRIP + 1)
    a, b = dispatch.asarray(an), dispatch.asarray(an[::-1].copy())
    assert _asked(monkeypatch, program, dispatch, a, b)[0]  # routed: over the floors, the router decides
    program(dispatch, a, b)  # (and the memo keeps its decision)
    dispatch.set_backend("numpy")
    try:
        for n in SIZES:
            an = np.linspace(0.0, 1.0, n)
            a, b = dispatch.asarray(an), dispatch.asarray(an[::-1].copy())
            _set_floors()
            assert _call.host_shortcut(_op(label), n)
            assert not _both_paths(monkeypatch, program, (a, b), (an, an[::-1].copy())), (label, n)
        with dispatch.trace() as t:
            program(dispatch, a, b)
        assert {r.reason for r in t.records} == {"forced numpy"}
    finally:
        dispatch.set_backend("auto")
    assert not _call.host_shortcut(_op(label), TRIP + 1)


def test_numpy_forced_for_the_process_makes_no_chunked_dask_array(monkeypatch):
    from dispatch import cluster

    monkeypatch.setattr(cluster, "connected", lambda: True)
    monkeypatch.setattr(cluster, "_cluster_holds", lambda nbytes: True)
    monkeypatch.setattr(cluster, "chunk_bytes", lambda: 1 << 20)
    n = cluster.LIVE_ELEMENTS
    assert cluster.result_reason(8 * n, n) is not None  # routed: a result this large spans the cluster
    dispatch.set_backend("numpy")
    try:
        assert cluster.result_reason(8 * n, n) is None
    finally:
        dispatch.set_backend("auto")
