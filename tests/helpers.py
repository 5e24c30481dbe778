"""What every comparison test shares: ``assert_same`` (a dispatch result against NumPy's), the
tolerance table, and the conversions between host arrays and dispatch arrays on a backend.

NumPy is always the reference: ``expected`` comes from plain ``numpy`` on host arrays.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import dispatch
from dispatch.arrays import creations, mirrors
from dispatch.arrays._array import _DeviceScalar

__all__ = ["RTOL", "Outcomes", "assert_same", "fake_cupy_router", "host", "on_backend", "patch_targets",
           "router_restored", "rtol_for"]

# Relative tolerance by the precision of the result: a few units in the last place, because a
# backend may evaluate transcendental functions with another library (SLEEF, cuda libm) and
# sum in another order. Integers and booleans compare exactly.
RTOL = {
    np.dtype("float16"): 2e-3,
    np.dtype("float32"): 2e-5,
    np.dtype("float64"): 1e-12,
    np.dtype("complex64"): 2e-5,
    np.dtype("complex128"): 1e-12,
}


def rtol_for(dtype: np.dtype, loose: float = 1.0) -> float:
    """The relative tolerance for results of ``dtype``; ``loose`` scales it for families whose
    algorithms differ (factorisations, FFTs)."""
    return RTOL.get(np.dtype(dtype), 0.0) * loose


def host(x: Any) -> Any:
    """A dispatch array as host NumPy, anything else as it is."""
    return np.asarray(x) if isinstance(x, dispatch.ndarray) else x


def on_backend(x: np.ndarray, backend: str) -> dispatch.ndarray:
    """A host array as a dispatch array resident where ``backend`` computes."""
    arr = dispatch.asarray(x)
    if backend in ("numpy", "torch-cpu", "auto"):
        return arr
    try:
        return arr.to(backend)
    except Exception:  # a dtype the device cannot hold (float64 on MPS): it stays on the host
        return arr


def assert_same(result: Any, expected: Any, *, loose: float = 1.0, signed_zeros: bool = True,
                values: bool = True, path: str = "result") -> None:
    """``result`` (from dispatch) is what NumPy gave as ``expected``.

    Checks, in order: the type (``dispatch.ndarray`` where NumPy gives an ``ndarray``, a scalar
    where NumPy gives a scalar, the same container for tuples, lists and named tuples), the
    dtype, the shape, then the values: exact for booleans, integers and anything that is not
    a number; within ``rtol_for(dtype, loose)`` for floats, with NaN and infinity positions
    equal and, where ``signed_zeros``, the sign of every zero equal. ``values=False`` stops
    after the shapes (results whose values are not unique, or not defined, as ``empty``'s).
    """
    kw = {"loose": loose, "signed_zeros": signed_zeros, "values": values}
    if isinstance(expected, np.ndarray) and type(expected) is np.ndarray:
        assert type(result) is dispatch.ndarray, \
            f"{path}: NumPy gives an ndarray, dispatch gave {type(result).__name__}"
        _same_array(np.asarray(result), expected, path, **kw)
    elif isinstance(expected, np.ndarray):  # a NumPy subclass (matrix, masked array): NumPy's own
        assert type(result) is type(expected), f"{path}: {type(result).__name__} is not {type(expected).__name__}"
        _same_array(np.asarray(result), np.asarray(expected), path, **kw)
    elif isinstance(expected, np.generic):
        if isinstance(result, _DeviceScalar):  # a scalar left on its device until read
            assert not result.device.is_host, f"{path}: a device scalar on the host"
            result = np.asarray(result)[()]
        assert isinstance(result, np.generic), \
            f"{path}: NumPy gives a scalar {type(expected).__name__}, dispatch gave {type(result).__name__}"
        _same_array(np.asarray(result), np.asarray(expected), path, **kw)
    elif isinstance(expected, (tuple, list)):
        assert type(result) is type(expected), f"{path}: {type(result).__name__} is not {type(expected).__name__}"
        assert len(result) == len(expected), f"{path}: {len(result)} items, NumPy has {len(expected)}"
        for i, (r, e) in enumerate(zip(result, expected, strict=True)):
            assert_same(r, e, path=f"{path}[{i}]", **kw)
    elif isinstance(expected, float) and math.isnan(expected):
        assert type(result) is float and math.isnan(result), f"{path}: {result!r} is not nan"
    else:
        assert type(result) is type(expected), f"{path}: {type(result).__name__} is not {type(expected).__name__}"
        assert not values or result == expected, f"{path}: {result!r} != {expected!r}"


def _same_array(got: np.ndarray, want: np.ndarray, path: str, loose: float, signed_zeros: bool, values: bool) -> None:
    assert got.dtype == want.dtype, f"{path}: dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape, f"{path}: shape {got.shape}, NumPy gives {want.shape}"
    if not values:
        return
    if want.dtype.kind not in "fc":
        if want.dtype.kind == "O":
            assert got.tolist() == want.tolist(), f"{path}: values differ"
        else:
            np.testing.assert_array_equal(got, want, err_msg=path, strict=True)
        return
    complex_ = want.dtype.kind == "c"
    parts = (("real", got.real, want.real), ("imag", got.imag, want.imag)) if complex_ else (("", got, want),)
    finite = np.ones(want.shape, bool)
    for name, g, w in parts:  # NaN and infinities part by part, exactly
        where = f"{path}{'.' + name if name else ''}"
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        assert (nan_g == nan_w).all(), f"{where}: NaN at {np.argwhere(nan_g != nan_w)[:5].tolist()}\n{g}\n{w}"
        inf_w = np.isinf(w)
        assert (np.isinf(g) == inf_w).all() and (g[inf_w] == w[inf_w]).all(), f"{where}: infinities differ\n{g}\n{w}"
        finite &= ~(nan_w | inf_w)
    # Finite values within the tolerance; a complex number as one (its rounding error is
    # relative to its modulus, not to each part).
    rtol = rtol_for(want.dtype, loose)
    gf = got[finite].astype(np.complex128 if complex_ else np.float64)
    wf = want[finite].astype(gf.dtype)
    # Values near zero that come out of cancellation are judged against the array's scale.
    atol = rtol * float(np.abs(wf).max()) * (loose > 1 or complex_) if wf.size else 0.0
    np.testing.assert_allclose(gf, wf, rtol=rtol, atol=atol, err_msg=path)
    if signed_zeros:
        for name, g, w in parts:
            zeros = finite & (w == 0) & (g == 0)
            assert (np.signbit(g[zeros]) == np.signbit(w[zeros])).all(), \
                f"{path}{'.' + name if name else ''}: the sign of a zero differs\n{g}\n{w}"


class Outcomes:
    """The cases one test runs, each checked against the xfail table.

    A case that fails and is listed is an expected failure; a listed case that passes, or an
    unlisted one that fails, fails the test (``finish``) with every such case named. A test
    whose only failures were listed ends as ``xfail`` with their reasons: each listed
    difference is seen to happen, and every other case was still checked.
    """

    def __init__(self) -> None:
        self.unexpected: list[str] = []
        self.expected: dict[str, list[str]] = {}

    @contextlib.contextmanager
    def case(self, label: str, known: Any) -> Iterator[None]:
        try:
            yield
        except (pytest.skip.Exception, pytest.xfail.Exception):
            raise
        except Exception as exc:
            if known is None:
                self.unexpected.append(f"{label}: {type(exc).__name__}: {_clip(str(exc))}")
            else:
                self.expected.setdefault(known.reason, []).append(label)
        else:
            if known is not None:
                self.unexpected.append(f"{label}: listed in xfails.py ({known.reason}) but passes")

    def finish(self) -> None:
        if self.unexpected:
            pytest.fail("\n".join(self.unexpected), pytrace=False)
        if self.expected:
            pytest.xfail("; ".join(f"{reason} ({', '.join(labels)})" for reason, labels in self.expected.items()))


def _clip(text: str, limit: int = 1500) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."


def patch_targets(monkeypatch: Any, **functions: Any) -> None:
    """Replace the registry's functions (``probe=...``, ``available=...``) for a test, in
    ``dispatch.targets.registry`` (its own calls: ``get`` probes) and in the package that
    re-exports them (the router's calls)."""
    for name, function in functions.items():
        monkeypatch.setattr(dispatch.targets.registry, name, function)
        monkeypatch.setattr(dispatch.targets, name, function)


@contextlib.contextmanager
def every_call_routed(monkeypatch: Any, tmp_path: Any) -> Iterator[None]:
    """Every host call over no floor, so each reaches the router (the seed policy, no
    exploring), with a memo of its own; the router's state and the floors restored afterwards."""
    from dispatch.base.ops import all_ops
    from dispatch.routing import router
    from dispatch.routing.history import History

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(router.ROUTER, "memo", {})
    with router_restored(History(explore_probability=0.0)):
        for op in all_ops():
            monkeypatch.setattr(op, "floor", 0)
            monkeypatch.setattr(op, "trip_floor", 0)
        yield


@contextlib.contextmanager
def router_restored(history: Any) -> Iterator[None]:
    """The router with no calibration loaded, ``history`` as its history and the seed policy;
    its policy, models, history and caches as they were afterwards."""
    from dispatch.routing import calibration, router

    calibration._loaded.clear()
    routing = router.ROUTER
    saved = (routing.policy.name, dict(routing.models), routing.history, routing.calibration_checked)
    routing.calibration_checked = False
    routing.models.clear()
    routing.switch("seed")
    routing.history = history
    router.clear_decisions()
    try:
        yield
    finally:
        routing.history, routing.calibration_checked = saved[2], saved[3]
        routing.models.clear()
        routing.models.update(saved[1])
        routing.switch(saved[0])
        routing.refusals.clear()
        router.clear_decisions()
        calibration._loaded.clear()


@contextlib.contextmanager
def fake_cupy_router(tmp_path: Any, monkeypatch: Any) -> Iterator[Any]:
    """The fake CuPy (``fakecupy.py``) as the cupy target, probed; a fresh history that neither
    explores nor learns from timed calls (the fake runs at NumPy's speed); the router's state
    restored afterwards (``router_restored``)."""
    import fakecupy

    from dispatch.routing import router
    from dispatch.routing.history import History

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    restore = fakecupy.install()
    dispatch.targets.reset("cupy")
    creations.clear()  # (a line's results moved to another test's device are no guide here)
    mirrors.clear()  # (nor copies kept on it)
    history = History(explore_probability=0.0)
    monkeypatch.setattr(history, "observe", lambda *args, **kwargs: None)
    monkeypatch.setattr(router, "observe", lambda *args, **kwargs: None)
    try:
        with router_restored(history):
            target = dispatch.targets.probe("cupy")
            assert target is not None, dispatch.targets.unavailable().get("cupy")
            yield target
    finally:
        restore()
        dispatch.targets.reset("cupy")
        creations.clear()
        mirrors.clear()
