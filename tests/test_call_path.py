"""The call path's handling of arguments: nested lists of arrays, and where indexing runs."""

from __future__ import annotations

import numpy as np
import pytest

import dispatch
from dispatch.arrays import _compiled
from dispatch.arrays._call import Inputs
from dispatch.base.ops import GETITEM, op_named
from dispatch.routing import router


def test_block_of_nested_lists_of_dispatch_arrays():
    a, b = np.arange(4.0).reshape(2, 2), np.ones((2, 2))
    got = dispatch.block([[dispatch.asarray(a), dispatch.asarray(b)], [dispatch.asarray(b), dispatch.asarray(a)]])
    assert type(got) is dispatch.ndarray
    np.testing.assert_array_equal(np.asarray(got), np.block([[a, b], [b, a]]))


def test_indexing_runs_where_the_data_is():
    """``__getitem__`` is outside the catalog but local: the local rule comes first, so a device
    array is indexed on its device (host data: NumPy, as before)."""
    x = dispatch.asarray(np.arange(10.0))
    decision = router.decide(GETITEM, Inputs([x]), (x, 3), {})
    assert decision.target.name == "numpy" and decision.reason.startswith("local")


def test_a_list_of_device_scalars_is_stacked_where_they_live():
    """``stack`` of 0-d results left on a device (a loop's ``.sum()`` values): the list's items
    are seen as arrays, not handed back to NumPy, which would ask dispatch again."""
    torch = pytest.importorskip("torch")
    from dispatch.arrays._array import device_scalar

    values = [device_scalar(torch.tensor(float(i), dtype=torch.float64)) for i in range(3)]
    result = dispatch.stack(values)
    assert type(result) is dispatch.ndarray
    np.testing.assert_array_equal(np.asarray(result), np.arange(3.0))
    assert result.dtype == np.float64 and result.shape == (3,)


# ---- a host call the router keeps on NumPy runs from the memo ----


@pytest.fixture
def routed_on_host(tmp_path, monkeypatch):
    """Every host call over no floor, so each reaches the router (the seed policy, which keeps
    these small calls on NumPy), with the router's state and the memo restored afterwards."""
    from helpers import every_call_routed

    from dispatch.arrays import _call

    with every_call_routed(monkeypatch, tmp_path):
        yield _call


HOST_MEMO_PROGRAMS = {
    "a + b": lambda xp, a, b: a + b,
    "2.0 * a": lambda xp, a, b: 2.0 * a,
    "xp.exp(a)": lambda xp, a, b: xp.exp(a),
    "a.sum(axis=1)": lambda xp, a, b: a.sum(axis=1),
    "a.max()": lambda xp, a, b: a.max(),
    "xp.fft.rfft(a, n=32, axis=-1)": lambda xp, a, b: xp.fft.rfft(a, n=32, axis=-1),  # padded: not sized
    "xp.maximum(a, b)": lambda xp, a, b: xp.maximum(a, b),
    "a / a.sum()": lambda xp, a, b: a / a.sum(),  # a NumPy scalar operand, keyed by its type
    "np.exp(a)": lambda xp, a, b: np.exp(a),  # NumPy's own ufunc given a dispatch array
    "xp.concatenate([a, b])": lambda xp, a, b: xp.concatenate([a, b]),  # a list of arrays
    "xp.stack((a, b), axis=1)": lambda xp, a, b: xp.stack((a, b), axis=1),  # a tuple of them
    "a.copy()": lambda xp, a, b: a.copy(),
}


def _router_off(monkeypatch, _call) -> None:
    def called(*args, **kwargs):
        raise AssertionError("the router or the general path was called")

    for owner, name in ((router, "decide"), (_call, "_run_numpy"), (_call, "Inputs")):
        monkeypatch.setattr(owner, name, called)


@pytest.mark.parametrize("label", HOST_MEMO_PROGRAMS)
def test_a_repeated_host_call_the_router_keeps_on_numpy_runs_from_the_memo(label, routed_on_host, monkeypatch):
    from helpers import assert_same

    program = HOST_MEMO_PROGRAMS[label]
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    a, b = dispatch.asarray(an), dispatch.asarray(bn)
    assert_same(program(dispatch, a, b), program(np, an, bn))  # decided by the router, and remembered
    _router_off(monkeypatch, routed_on_host)
    assert_same(program(dispatch, a, b), program(np, an, bn))


@pytest.mark.skipif(not _compiled.ACTIVE, reason=f"the compiled fast path is {_compiled.STATUS}")
@pytest.mark.parametrize("label", HOST_MEMO_PROGRAMS)
def test_the_compiled_path_serves_the_memo_without_the_python_path(label, routed_on_host, monkeypatch):
    """A repeat the memo serves costs the Python path nothing: the compiled path makes the same
    key, finds the entry and runs it."""
    from helpers import assert_same

    program = HOST_MEMO_PROGRAMS[label]
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    a, b = dispatch.asarray(an), dispatch.asarray(bn)
    program(dispatch, a, b)  # decided by the router, and remembered
    _router_off(monkeypatch, routed_on_host)
    monkeypatch.setattr(routed_on_host, "call", _raises("the Python path ran"))
    monkeypatch.setattr(routed_on_host, "_memo_run", _raises("the Python memo ran"))
    assert_same(program(dispatch, a, b), program(np, an, bn))


def test_an_operator_numpy_runs_in_its_temporary_runs_from_the_memo_in_it(routed_on_host, monkeypatch):
    """``(a + b) * 2.0`` on arrays NumPy would compute in the temporary ``a + b`` (its elision,
    which dispatch does for it): a repeat is served by the memo, still in the temporary."""
    from helpers import assert_same

    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((64, 1024)), rng.standard_normal((64, 1024))  # 512 KiB: elided
    a, b = dispatch.asarray(an), dispatch.asarray(bn)
    assert_same((a + b) * 2.0, (an + bn) * 2.0)  # decided by the router, and remembered
    assert any(key[-1] == routed_on_host._INTO for key in router.ROUTER.memo)
    _router_off(monkeypatch, routed_on_host)
    assert_same((a + b) * 2.0, (an + bn) * 2.0)
    temporary = a + b
    multiply = next(key[0] for key in router.ROUTER.memo if key[-1] == routed_on_host._INTO)
    again = routed_on_host.call(multiply, (temporary, 2.0), {}, into=temporary)
    assert again is temporary
    assert_same(again, (an + bn) * 2.0)


def test_an_in_place_operator_on_host_data_runs_from_the_memo_into_its_array(routed_on_host, monkeypatch):
    """``a += b``, ``a *= 2.0`` and ``np.add(a, b, out=a)`` on host data over the floors: a repeat
    is served by the memo, written into ``a`` itself (the same object and memory), as NumPy's
    in-place operators are. An ``out=`` that is not the first operand is no memo key."""
    from helpers import assert_same

    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    a, b = dispatch.asarray(an.copy()), dispatch.asarray(bn)
    want = an.copy()

    def step(x, y, xp):
        x += y
        x *= 2.0
        xp.add(x, y, out=x)
        xp.multiply(x, y, out=(x,))
        return x

    assert_same(step(a, b, dispatch), step(want, bn, np))  # decided by the router, and remembered
    # (``x += y`` and ``add(x, y, out=x)`` are one key: the same call)
    assert sum(routed_on_host._IN_PLACE in key for key in router.ROUTER.memo) == 3
    _router_off(monkeypatch, routed_on_host)
    memory = a._engine_array
    again = step(a, b, dispatch)
    assert again is a and a._engine_array is memory
    assert_same(a, step(want, bn, np))
    c = dispatch.zeros((6, 5))
    from dispatch.base.ops import op_named

    assert routed_on_host._memo_key(op_named("add"), (a, b), {"out": (c,)}) is None


@pytest.mark.skipif(not _compiled.ACTIVE, reason=f"the compiled fast path is {_compiled.STATUS}")
def test_the_compiled_path_runs_an_elided_operator_from_the_memo_into_its_temporary(routed_on_host, monkeypatch):
    """``(a + b) * 2.0``: once the memo holds the multiply NumPy would run in the temporary, the
    compiled path runs it there, with no Python. A named operand, or a temporary whose data
    another array holds, is never written into."""
    from helpers import assert_same

    _call = routed_on_host
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((64, 1024)), rng.standard_normal((64, 1024))  # 512 KiB: elided
    a, b = dispatch.asarray(an), dispatch.asarray(bn)
    (a + b) * 2.0  # decided by the router, and remembered
    key = next(key for key in router.ROUTER.memo if key[-1] == _call._INTO)
    decision, target, run, epoch = router.ROUTER.memo[key]
    outs = []

    def recorded(*args, **kwargs):
        outs.append(kwargs.get("out"))
        return run(*args, **kwargs)

    router.ROUTER.memo[key] = (decision, target, recorded, epoch)
    named, kept = a + b, []

    def shared():  # a temporary whose data ``kept`` holds too
        t = a + b
        kept.append(t._engine_array)
        return t

    for got, data in ((named * 2.0, named._engine_array), (shared() * 2.0, kept[-1])):  # (kept[-1]: after shared())
        assert got._engine_array is not data
        assert_same(got, (an + bn) * 2.0)
        np.testing.assert_array_equal(data, an + bn)  # left as it was
    assert outs == []
    _router_off(monkeypatch, _call)
    monkeypatch.setattr(_call, "call", _raises("the Python path ran"))
    monkeypatch.setattr(_call, "_memo_run", _raises("the Python memo ran"))
    got = (a + b) * 2.0
    assert len(outs) == 1 and got._engine_array is outs[0]
    assert_same(got, (an + bn) * 2.0)


def _raises(why):
    def called(*args, **kwargs):
        raise AssertionError(why)

    return called


def _python_calls(monkeypatch, _call) -> list:
    """Each call that reaches the Python path, counted, then run."""
    seen = []
    call = _call.call

    def counted(*args, **kwargs):
        seen.append(args[0].name)
        return call(*args, **kwargs)

    monkeypatch.setattr(_call, "call", counted)
    return seen


def test_a_memo_entry_serves_only_while_its_decision_holds_and_no_region_is_recorded(routed_on_host, monkeypatch):
    """As the Python memo checks: a decision the router no longer holds, or a region being
    recorded for its plan, sends the call to the Python path (compiled or not)."""
    an = np.random.default_rng(0).standard_normal((6, 5))
    a = dispatch.asarray(an)
    a + 1.0  # remembered
    seen = _python_calls(monkeypatch, routed_on_host)
    a + 1.0
    assert seen == ([] if _compiled.ACTIVE else ["add"])
    seen.clear()
    live = router.ROUTER.live
    monkeypatch.setattr(live, "on", True)
    monkeypatch.setattr(live, "recording", False)
    live.resume()
    np.testing.assert_array_equal(np.asarray(a + 1.0), an + 1.0)
    assert seen == ["add"]
    live.recording = False
    seen.clear()
    decision = next(entry[0] for entry in router.ROUTER.memo.values() if entry[0].key[0] == "add")
    monkeypatch.delitem(router.ROUTER.decisions, decision.key)  # decided again, as after a plan's revision
    np.testing.assert_array_equal(np.asarray(a + 1.0), an + 1.0)
    assert seen == ["add"]


def test_a_settled_decision_that_learns_is_timed_once_in_settled_every_calls(routed_on_host, monkeypatch):
    """A memo entry whose decision learns (``sample``) and has settled runs one call in
    ``SETTLED_EVERY`` through the path that times it, and counts the calls it serves."""
    an = np.random.default_rng(0).standard_normal((6, 5))
    a = dispatch.asarray(an)
    a + 1.0  # remembered
    decision = next(entry[0] for entry in router.ROUTER.memo.values() if entry[0].key[0] == "add")
    decision.sample, decision.settled, decision.calls = True, True, 0
    seen = _python_calls(monkeypatch, routed_on_host)
    timed = []
    monkeypatch.setattr(router, "observe", lambda d, seconds: timed.append(d.calls))
    for _ in range(2 * router.SETTLED_EVERY):
        np.testing.assert_array_equal(np.asarray(a + 1.0), an + 1.0)
    every = router.SETTLED_EVERY
    assert decision.calls == 2 * every and timed == [every, 2 * every]
    assert seen == (["add", "add"] if _compiled.ACTIVE else ["add"] * (2 * every))


def test_a_numpy_scalar_operand_under_the_floors_runs_on_numpy_straight_away(monkeypatch):
    """``x / x.sum()``: the sum is a NumPy scalar, which takes the operator's fast case as a
    Python float does (compiled or not), not the router's path."""
    from dispatch.arrays import _call

    an = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    a = dispatch.asarray(an)
    seen = _python_calls(monkeypatch, _call)
    for scalar in (np.float32(3.0), np.float64(3.0), np.int64(3), an.sum()):
        for got, want in ((a / scalar, an / scalar), (a - scalar, an - scalar)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(np.asarray(got), want)
    assert seen == []


def test_a_product_run_from_the_memo_is_seen_by_blas_spin(routed_on_host, monkeypatch):
    """A product the memo runs on NumPy still tells ``blas_spin`` that NumPy's BLAS ran."""
    import math

    from dispatch.base import blas_spin

    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((6, 5)), rng.standard_normal((5, 4))
    a, b = dispatch.asarray(an), dispatch.asarray(bn)
    np.testing.assert_array_equal(np.asarray(a @ b), an @ bn)  # decided, and remembered
    _router_off(monkeypatch, routed_on_host)
    monkeypatch.setattr(blas_spin, "_last", -math.inf)
    got = a @ b
    assert blas_spin.spinning()
    np.testing.assert_array_equal(np.asarray(got), an @ bn)
    assert got.dtype == np.float64 and got.shape == (6, 4)


@pytest.mark.parametrize("name", ["matmul", "dot"])
def test_a_product_from_the_memo_runs_numpys_function_itself(routed_on_host, monkeypatch, name):
    """The memo keeps NumPy's product itself, the call noting the BLAS as it runs it: no Python
    frame of dispatch's wraps it, so the compiled path serves the call without one."""
    import math
    import operator
    import sys
    from pathlib import Path

    from dispatch.base import blas_spin

    rng = np.random.default_rng(1)
    an, bn = rng.standard_normal((6, 5)), rng.standard_normal(5)
    a, b = dispatch.asarray(an), dispatch.asarray(bn)
    product = operator.matmul if name == "matmul" else dispatch.dot
    product(a, b)  # decided, and remembered
    run = next(entry[2] for key, entry in router.ROUTER.memo.items() if key[0].name == name)
    assert run is op_named(name).func
    monkeypatch.setattr(blas_spin, "_last", -math.inf)
    frames = []
    real = sys.getprofile()
    package = str(Path(dispatch.__file__).parent)
    sys.setprofile(lambda frame, event, arg: frames.append(frame.f_code.co_name)
                   if event == "call" and frame.f_code.co_filename.startswith(package) else None)
    try:
        got = product(a, b)
    finally:
        sys.setprofile(real)
    assert blas_spin.spinning()
    if _compiled.ACTIVE:
        assert frames == []
    want = an @ bn
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


def test_host_calls_with_consequences_are_not_remembered(routed_on_host, monkeypatch):
    """A decision asked again at each call (for data large enough to need Dask: ``live``), or
    one made while a region is recorded for its plan: the router sees every such call."""
    an = np.linspace(0.0, 1.0, 30).reshape(6, 5)
    asked = []
    decide = router.decide
    plain = dispatch.asarray(an)
    key = routed_on_host._memo_key(op_named("add"), (plain, 1.0), {})
    flagged = []

    def _with(decision, flag: str):
        setattr(decision, flag, True)
        flagged.append(decision)
        return decision

    monkeypatch.setattr(router, "decide", lambda *args: asked.append(1) or _with(decide(*args), "live"))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(plain + 1.0), an + 1.0)
    assert len(asked) == 3 and key not in router.ROUTER.memo
    for decision in flagged:  # (set on the router's cached decision)
        decision.live = False
    monkeypatch.setattr(router.ROUTER.live, "recording", True)
    asked.clear()
    monkeypatch.setattr(router, "decide", lambda *args: asked.append(1) or decide(*args))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(plain + 1.0), an + 1.0)
    assert len(asked) == 3 and key not in router.ROUTER.memo
    router.ROUTER.live.recording = False
    plain + 1.0
    assert key in router.ROUTER.memo  # remembered once nothing follows from it
    monkeypatch.setattr(router, "decide", decide)
    with dispatch.trace() as t:
        got = plain + 1.0
    np.testing.assert_array_equal(np.asarray(got), an + 1.0)
    assert [(r.op, r.target) for r in t.records] == [("add", "numpy")]  # a trace sees it


def test_a_temporary_numpy_would_write_into_is_written_into_with_a_memo_entry_beside_it(routed_on_host, monkeypatch):
    """``(a + b) + b`` on arrays of 256 KiB or more: NumPy adds into the temporary ``a + b``, and
    so does dispatch, though the signature of that add has a memo entry."""
    rng = np.random.default_rng(1)
    an, bn = rng.standard_normal((64, 1024)), rng.standard_normal((64, 1024))
    a, b = dispatch.asarray(an), dispatch.asarray(bn)
    a + b
    a + b  # remembered: (add, two rootless float64 arrays of this shape)
    assert any(entry[1] is None for entry in router.ROUTER.memo.values())
    into = []
    run_into = routed_on_host._run_into
    monkeypatch.setattr(routed_on_host, "_run_into",
                        lambda op, args, target: into.append(target) or run_into(op, args, target))
    got = (a + b) + b
    assert len(into) == 1  # written into the temporary
    np.testing.assert_array_equal(np.asarray(got), (an + bn) + bn)


@pytest.mark.parametrize("order", ["C", "K", "F", "A"])
def test_a_routed_copy_keeps_the_methods_order(order, routed_on_host):
    """``a.copy()`` is in C order, as NumPy's method makes it, though the router runs
    ``numpy.copy``, whose order is "K": an array in Fortran order copied over the floor came
    back in Fortran order."""
    an = np.asfortranarray(np.arange(600.0).reshape(20, 30))
    a = dispatch.asarray(an)
    for _ in range(3):  # ``numpy.copy``'s own order, "K", remembered for this array: not the method's
        assert dispatch.copy(a)._engine_array.flags.f_contiguous
    for _ in range(3):  # decided by the router, then remembered
        got = a.copy() if order == "C" else a.copy(order)
    want = an.copy(order)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert (got._engine_array.flags.c_contiguous, got._engine_array.flags.f_contiguous) == (want.flags.c_contiguous,
                                                                          want.flags.f_contiguous)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert not np.shares_memory(got._engine_array, an)


def test_a_copy_on_torch_cpu_is_in_the_order_asked(monkeypatch):
    """torch's clone keeps strides ("K"); asked for "C" it makes a contiguous copy."""
    pytest.importorskip("torch")
    monkeypatch.setattr(op_named("copy"), "floor", 0)  # over copy's floor: the router places it
    an = np.asfortranarray(np.arange(12000.0).reshape(100, 120))
    a = dispatch.asarray(an)
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        got = a.copy()
    assert [(r.op, r.target) for r in t.records] == [("copy", "torch-cpu")]
    host = np.asarray(got)
    assert host.flags.c_contiguous and host.dtype == an.dtype and host.shape == an.shape
    np.testing.assert_array_equal(host, an)
