"""Strict mode (``DISPATCH_EXACT=1``, ``set_config(exact=True)``): every op whose result may
differ from NumPy's in the last bits (docs/equality.md) runs on NumPy, even with a target forced,
so its bits are NumPy's; element-wise IEEE arithmetic and integer work still go elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
from helpers import router_restored

import dispatch
from dispatch import targets
from dispatch.arrays._call import Inputs
from dispatch.base import settings
from dispatch.base.ops import op_named
from dispatch.routing import router
from dispatch.routing.history import History

ROOT = Path(__file__).resolve().parent.parent
N = 300_000  # over every floor: the call is routed

needs_torch = pytest.mark.skipif(targets.probe("torch-cpu") is None, reason="torch-cpu is not available here")

CALLS = {
    "sum": (lambda xp, a, m: xp.sum(a), "sum"),
    "mean": (lambda xp, a, m: xp.mean(a), "mean"),
    "exp": (lambda xp, a, m: xp.exp(a), "exp"),
    "matmul": (lambda xp, a, m: m @ m.T, "matmul"),
    "fft": (lambda xp, a, m: xp.fft.fft(a), "fft.fft"),
}


def _inputs(seed: int = 0) -> tuple[numpy.ndarray, numpy.ndarray]:
    rng = numpy.random.default_rng(seed)
    return rng.uniform(-10.0, 10.0, N), rng.standard_normal((300, 700))


def _same_bits(got, want) -> None:
    got, want = numpy.asarray(got), numpy.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert numpy.array_equal(got.reshape(-1).view(numpy.uint8), want.reshape(-1).view(numpy.uint8)), "not NumPy's bits"


def _run(call, a, m):
    """The call on dispatch arrays, with the trace's (op, target, reason) records."""
    da, dm = dispatch.asarray(a), dispatch.asarray(m)
    with dispatch.trace() as seen:
        got = call(dispatch, da, dm)
    return got, [(r.op, r.target, r.reason) for r in seen.records]


@needs_torch
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_forced_target_gives_numpys_bits_in_strict_mode(name):
    """Strict mode outranks ``using``: the call runs on NumPy, and the trace says why."""
    call, op = CALLS[name]
    a, m = _inputs()
    with dispatch.using("torch-cpu"), dispatch.config_context(exact=True):
        got, seen = _run(call, a, m)
    _same_bits(got, call(numpy, a, m))
    assert (op, "numpy", f"exact: {op} may differ from NumPy in the last bits elsewhere") in seen, seen


@needs_torch
def test_element_wise_arithmetic_and_integer_work_still_go_to_the_forced_target():
    a, _ = _inputs()
    ints = numpy.arange(N, dtype=numpy.int64)
    with dispatch.using("torch-cpu"), dispatch.config_context(exact=True):
        total, seen = _run(lambda xp, p, q: p + p, a, ints)
        _same_bits(total, a + a)
        integer, seen_int = _run(lambda xp, p, q: xp.sum(q), a, ints)
        _same_bits(integer, ints.sum())
    assert [(op, target) for op, target, _ in seen] == [("add", "torch-cpu")]
    assert [(op, target) for op, target, _ in seen_int] == [("sum", "torch-cpu")]


@needs_torch
def test_a_routed_call_turns_exact_and_back(tmp_path, monkeypatch):
    """A float sum the seed's table sends away from NumPy (torch-cpu here, a GPU where there is
    one) is decided for NumPy in strict mode, and for that target again after it: no cached
    decision outlives the change."""
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))  # no calibration: the seed's table
    monkeypatch.setattr(router, "HOST_CORES", 16)  # whose reductions go to torch-cpu on many cores
    op, inputs = op_named("sum"), Inputs([dispatch.asarray(_inputs()[0])])
    with router_restored(History()):
        before = router.decide(op, inputs, (), {}).target.name
        assert before != "numpy"
        with dispatch.config_context(exact=True):
            decision = router.decide(op, inputs, (), {})
        assert (decision.target.name, decision.reason.split(":")[0]) == ("numpy", "exact")
        assert router.decide(op, inputs, (), {}).target.name == before


@needs_torch
def test_a_remembered_call_is_not_served_after_the_change():
    """The call path remembers a repeated call's decision and resolved function (its memo, served
    by the compiled path too): strict mode turned on drops it."""
    a, m = _inputs(1)
    call = CALLS["sum"][0]
    routed = dispatch.asarray(a)
    with dispatch.using("torch-cpu"):
        for _ in range(5):  # decided, cached and remembered
            call(dispatch, routed, None)
        with dispatch.config_context(exact=True):
            for _ in range(3):
                _same_bits(call(dispatch, routed, None), a.sum())
            _, seen = _run(call, a, m)
        _, after = _run(call, a, m)
    assert [t for _, t, _ in seen] == ["numpy"] and [t for _, t, _ in after] == ["torch-cpu"], (seen, after)


def test_config_sets_and_restores_strict_mode():
    assert dispatch.get_config()["exact"] is False
    with dispatch.config_context(exact=True):
        assert dispatch.get_config()["exact"] is True
        assert router.exact()
    assert dispatch.get_config()["exact"] is False
    with pytest.raises(ValueError, match=r"^exact='yes': expected True or False$"):
        dispatch.set_config(exact="yes")


@pytest.mark.parametrize("raw, want", [("", False), ("0", False), ("1", True), ("true", True)])
def test_the_variable_is_read(raw, want):
    assert settings.read({"DISPATCH_EXACT": raw}).exact is want


def test_the_variable_refuses_other_words():
    with pytest.raises(ValueError, match=r"^DISPATCH_EXACT='maybe': expected 0 or 1 \(or false / true\)$"):
        settings.read({"DISPATCH_EXACT": "maybe"})


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_")} | env
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=300)


@needs_torch
def test_the_variable_makes_a_program_print_numpys_digits():
    """The program of docs/equality.md: forced onto torch-cpu, a sum prints NumPy's digits."""
    code = ("import dispatch as np, numpy\n"
            "x = numpy.random.default_rng(0).uniform(-10, 10, 300_000)\n"
            "print(repr(float(np.sum(np.asarray(x)))), repr(float(x.sum())), np.get_config()['exact'])\n")
    done = _python(code, DISPATCH_EXACT="1", DISPATCH_BACKEND="torch-cpu")
    assert done.returncode == 0, done.stderr
    got, want, exact = done.stdout.split()
    assert (got, exact) == (want, "True")


def test_a_bad_value_is_refused_at_import_with_the_variables_name():
    done = _python("import dispatch", DISPATCH_EXACT="maybe")
    assert done.returncode != 0
    assert "ValueError: DISPATCH_EXACT='maybe': expected 0 or 1" in done.stderr, done.stderr
