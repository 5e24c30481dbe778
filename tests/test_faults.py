"""Fault injection: what happens when a backend cannot be imported, fails in the middle of a
call, cannot hold a dtype, or is forced while unavailable. Every call must still return
NumPy's result, leave its inputs as they were, write ``out=`` whole or not at all, and say
why in the trace, once per (op, reason) in the log.

GPU-specific faults (a CuPy memory-pool limit, a torch memory fraction) are marked ``gpu``.
"""

from __future__ import annotations

import gc
import json
import logging
import subprocess
import sys
import textwrap
import warnings

import numpy
import pytest
from _synthetic import synthetic
from conftest import DEVICE_BACKENDS, require
from helpers import assert_same, router_restored

import dispatch
import dispatch.targets
from dispatch.routing import calibration, router
from dispatch.routing.history import History
from dispatch.targets import torch_target


def run_python(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter (this checkout on its path); it prints one JSON line."""
    import os

    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env}
    full_env.pop("DISPATCH_TRACE", None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- a backend whose import fails -------------------------------------------------------------------------

BLOCK_TORCH = {
    "none in sys.modules": "import sys; sys.modules['torch'] = None",
    "an import hook that raises": """
        import sys
        class Broken:
            def find_spec(self, name, path=None, target=None):
                if name == 'torch' or name.startswith('torch.'):
                    raise RuntimeError('CUDA driver initialization failed')
        sys.meta_path.insert(0, Broken())
    """,
}


@pytest.mark.parametrize("how", BLOCK_TORCH, ids=list(BLOCK_TORCH))
def test_a_backend_that_cannot_be_imported_is_unavailable_with_its_reason(how):
    result = run_python(textwrap.dedent(BLOCK_TORCH[how]) + """
import json, numpy
import dispatch, dispatch.targets
a = dispatch.arange(12.0).reshape(3, 4)
total = float((a @ a.T).sum() + dispatch.linalg.norm(a))
try:
    with dispatch.using("torch-cpu"):
        pass
    forced = None
except RuntimeError as exc:
    forced = str(exc)
ref = numpy.arange(12.0).reshape(3, 4)
print(json.dumps({"available": sorted(dispatch.targets.available()), "why": dispatch.targets.unavailable(),
                  "total": total, "expected": float((ref @ ref.T).sum() + numpy.linalg.norm(ref)),
                  "forced": forced}))
""")
    assert "torch-cpu" not in result["available"] and "numpy" in result["available"]
    for name in ("torch-cpu", "torch-cuda", "torch-mps"):
        assert "torch cannot be imported" in result["why"][name]
    assert result["total"] == result["expected"]
    assert result["forced"] is not None and "torch-cpu" in result["forced"] and "torch" in result["forced"]


def test_importing_dispatch_imports_no_backend():
    result = run_python("""
import json, sys
import dispatch
a = dispatch.arange(5.0)
(a + 1).sum()
print(json.dumps(sorted({"torch", "cupy"} & set(sys.modules))))
""")
    assert result == []


@pytest.mark.parametrize("policy", ["seed", "cost", "oracle"])
def test_small_host_calls_import_no_backend_whatever_the_policy(tmp_path, policy):
    """A stored calibration that knows torch and a GPU (the cost policy), or the oracle: a small
    call on host data still runs on NumPy without probing them, traced or not."""
    synthetic(gpu=True).save(tmp_path / f"calibration-{calibration.fingerprint()}.json")
    result = run_python(f"""
import json, sys
import dispatch
from dispatch.routing import router
if {policy!r} != "cost":
    router.set_policy({policy!r})
a = dispatch.arange(5.0)
(a + 1).sum()
with dispatch.trace() as t:
    b = dispatch.linalg.inv(dispatch.eye(3) * 2) @ a[:3]
print(json.dumps({{"policy": router.policy(), "imported": sorted({{"torch", "cupy"}} & set(sys.modules)),
                  "targets": sorted({{r.target for r in t.records}})}}))
""", DISPATCH_CACHE_DIR=str(tmp_path))
    assert result == {"policy": policy, "imported": [], "targets": ["numpy"]}


# ---- a failure in the middle of a call -------------------------------------------------------------------------

FAILURES = {
    "cuda out of memory": RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total)"),
    "memory error": MemoryError("cannot allocate"),
}


def _failing(exc: BaseException):
    def impl(*args, **kwargs):
        raise exc

    return impl


@pytest.fixture
def torch_cpu():
    require("torch-cpu")
    router.clear_decisions()
    yield dispatch.targets.get("torch-cpu")
    router.clear_decisions()


@pytest.mark.parametrize("failure", FAILURES, ids=list(FAILURES))
@pytest.mark.parametrize("op", ["matmul", "sum", "add", "linalg.inv"])
def test_a_failure_mid_call_gives_numpys_result(torch_cpu, monkeypatch, failure, op):
    exc = FAILURES[failure]
    if op == "add":
        monkeypatch.setitem(torch_target._UFUNC_FIXES, "add", _failing(exc))
    else:
        monkeypatch.setitem(torch_target._IMPLS, op, _failing(exc))
    x = numpy.arange(12.0).reshape(3, 4) - 5
    a, b = dispatch.asarray(x.copy()), dispatch.asarray(x.T.copy())
    before = (a.tobytes(), b.tobytes())
    out = dispatch.full((3, 3) if op == "matmul" else (3, 4), -1.0)
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        if op == "matmul":
            got, want = dispatch.matmul(a, b, out=out), numpy.matmul(x, x.T)
        elif op == "sum":
            got, want = a.sum(axis=0), x.sum(axis=0)
        elif op == "add":
            got, want = dispatch.add(a, 1.5, out=out), x + 1.5
        else:
            got = dispatch.linalg.inv(a[:, :3] + 10 * dispatch.eye(3))
            want = numpy.linalg.inv(x[:, :3] + 10 * numpy.eye(3))
    assert_same(got, want)
    if op in ("matmul", "add"):
        assert got is out
    assert (a.tobytes(), b.tobytes()) == before, "an input changed"
    why = [w for (name, w) in t.fallbacks if name == op]
    assert why and type(exc).__name__ in why[0] and "torch-cpu failed" in why[0]
    assert any(r.op == op and r.target == "numpy" and type(exc).__name__ in r.reason for r in t.records)


def test_inplace_operator_after_a_failure_applies_once(torch_cpu, monkeypatch):
    monkeypatch.setitem(torch_target._UFUNC_FIXES, "add", _failing(FAILURES["cuda out of memory"]))
    a = dispatch.arange(6.0)
    view = a[2:]
    with dispatch.using("torch-cpu"):
        a += 1
    assert_same(a, numpy.arange(6.0) + 1)
    assert_same(view, numpy.arange(6.0)[2:] + 1)


def test_out_is_left_alone_when_numpy_also_fails(torch_cpu, monkeypatch):
    monkeypatch.setitem(torch_target._IMPLS, "matmul", _failing(FAILURES["memory error"]))
    a, out = dispatch.ones((3, 4)), dispatch.full((3, 3), -1.0)
    with dispatch.using("torch-cpu"), pytest.raises(ValueError):
        dispatch.matmul(a, a, out=out)
    assert_same(out, numpy.full((3, 3), -1.0))


def test_a_failure_is_not_remembered(torch_cpu, monkeypatch):
    """Failures can pass (memory frees up): the next call tries the target again."""
    monkeypatch.setitem(torch_target._IMPLS, "sum", _failing(FAILURES["cuda out of memory"]))
    a = dispatch.arange(8.0)
    with dispatch.using("torch-cpu"):
        a.sum()
    monkeypatch.undo()
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        assert a.sum() == 28.0
    assert [r.target for r in t.records if r.op == "sum"] == ["torch-cpu"]


# ---- a dtype the target cannot hold -----------------------------------------------------------------------------


def test_uint32_on_torch_runs_on_numpy_with_the_reason(torch_cpu):
    x = numpy.arange(10, dtype=numpy.uint32) * 7
    a = dispatch.asarray(x.copy())
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        got = [a + a, a.max(), numpy.sort(a), a[::2]]
    for g, w in zip(got, [x + x, x.max(), numpy.sort(x), x[::2]], strict=True):
        assert_same(g, w)
    reasons = [w for (_, w) in t.fallbacks]
    assert reasons and all("uint32" in w for w in reasons), reasons
    assert all(r.target == "numpy" for r in t.records)


def _fake_mps(torch) -> torch_target.TorchTarget:
    """A torch target that believes it is on MPS while computing on the CPU: its dtype rules
    are MPS's (no float64, no complex128) without an Apple GPU."""
    target = torch_target.TorchTarget("cpu")
    target.kind, target.name = "mps", "torch-mps"
    return target


def test_float64_on_mps_runs_on_numpy_with_the_reason(monkeypatch):
    torch = pytest.importorskip("torch")
    fake = _fake_mps(torch)
    with pytest.raises(dispatch.targets.Unsupported, match="MPS cannot hold float64"):
        fake.torch_dtype(numpy.float64)
    assert fake.torch_dtype(numpy.float32) is torch.float32
    monkeypatch.setitem(dispatch.targets.registry._targets, "torch-mps", fake)
    monkeypatch.delitem(dispatch.targets.registry._unavailable, "torch-mps", raising=False)
    router.clear_decisions()
    try:
        x = numpy.linspace(0, 1, 7)
        with dispatch.using("torch-mps"), dispatch.trace() as t:
            got64 = dispatch.asarray(x).sum()
            got32 = dispatch.asarray(x.astype(numpy.float32)).sum()
        assert_same(got64, x.sum())
        assert numpy.isclose(float(got32), x.astype(numpy.float32).sum(), rtol=1e-6)
        assert any("MPS cannot hold float64" in w for (_, w) in t.fallbacks)
    finally:
        router.clear_decisions()


# ---- a forced backend that is not there -------------------------------------------------------------------------


def _an_unavailable_backend() -> str:
    missing = [n for n in dispatch.targets.names() if n not in dispatch.targets.available()]
    if not missing:
        pytest.skip("every backend is available here")
    return "cupy" if "cupy" in missing else missing[0]


def test_using_an_unavailable_backend_raises_naming_why():
    name = _an_unavailable_backend()
    with pytest.raises(RuntimeError) as info:
        with dispatch.using(name):
            pass
    assert name in str(info.value) and dispatch.targets.unavailable()[name] in str(info.value)
    with pytest.raises(ValueError, match="unknown backend"):
        dispatch.set_backend("tpu")


def test_environment_forcing_an_unavailable_backend_still_gives_numpys_results():
    name = _an_unavailable_backend()
    result = run_python("""
import json, numpy, dispatch, dispatch.tracing
a = dispatch.arange(12.0).reshape(3, 4)
got = [float(a.sum()), (a @ a.T).tolist(), dispatch.linalg.svd(a, compute_uv=False).tolist()]
ref = numpy.arange(12.0).reshape(3, 4)
want = [float(ref.sum()), (ref @ ref.T).tolist(), numpy.linalg.svd(ref, compute_uv=False).tolist()]
print(json.dumps({"same": got == want, "backend": dispatch.get_backend(),
                  "fallbacks": [[op, why, n] for (op, why), n in dispatch.tracing.fallbacks().items()]}))
""", DISPATCH_BACKEND=name)
    assert result["same"] and result["backend"] == name
    reasons = {op: why for op, why, _ in result["fallbacks"]}
    assert {"sum", "matmul", "linalg.svd"} <= set(reasons)
    assert all(f"forced {name}, which is unavailable" in why for why in reasons.values())


def test_environment_forcing_an_unavailable_backend_still_draws_numpys_streams():
    """Random draws too (a Generator's, a RandomState's, the legacy functions'; small and large):
    NumPy's streams on the host, each draw recorded as a fallback, none raising."""
    name = _an_unavailable_backend()
    result = run_python("""
import json, numpy, dispatch, dispatch.tracing
def draws(np):
    rng = np.random.default_rng(7)
    legacy = np.random.RandomState(3)
    np.random.seed(5)
    out = [rng.standard_normal(3), rng.choice(10, 4), rng.random(200_000), legacy.normal(size=(2, 2)),
           np.random.rand(3)]
    return [numpy.asarray(a) for a in out]
got, want = draws(dispatch), draws(numpy)
print(json.dumps({"same": all(g.dtype == w.dtype and g.shape == w.shape and numpy.array_equal(g, w)
                              for g, w in zip(got, want)),
                  "fallbacks": [[op, why, n] for (op, why), n in dispatch.tracing.fallbacks().items()]}))
""", DISPATCH_BACKEND=name)
    assert result["same"]
    counts = {op: n for op, why, n in result["fallbacks"] if f"forced {name}, which is unavailable" in why}
    assert counts == {"random.Generator.standard_normal": 1, "random.Generator.choice": 1, "random.Generator.random": 1,
                      "random.RandomState.normal": 1, "random.seed": 1, "random.rand": 1}, result["fallbacks"]


# ---- fallbacks are recorded once per (op, reason), not flooded ---------------------------------------------------


def test_fallbacks_log_once_and_count_every_call(torch_cpu, caplog):
    a = dispatch.asarray(numpy.arange(5, dtype=numpy.uint16))
    before = dispatch.tracing.fallbacks()
    with caplog.at_level(logging.INFO, logger="dispatch"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with dispatch.using("torch-cpu"):
            for _ in range(50):
                a + a
    after = dispatch.tracing.fallbacks()
    added = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert list(added.values()) == [50], added
    (key,) = added
    logged = [r for r in caplog.records if key[1] in r.getMessage()]
    assert len(logged) <= 1 and not caught
    if key not in before:
        assert len(logged) == 1


# ---- GPU faults -------------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_cupy_memory_pool_limit_falls_back_to_numpy():
    require("cupy")
    import cupy

    x = numpy.random.default_rng(0).standard_normal((512, 512))
    a = dispatch.asarray(x).to("cupy")
    # A pool of its own, limited to 1 KiB: the default pool's free blocks, which earlier tests
    # leave inside its chunks, could serve the product under any limit set on it.
    pool = cupy.cuda.MemoryPool()
    pool.set_limit(size=1024)
    # a router without decisions cached by earlier tests; cupy forced, or it may pick torch-cuda
    with cupy.cuda.using_allocator(pool.malloc), router_restored(History()), dispatch.using("cupy"), \
            dispatch.trace() as t:
        got = a @ a
    assert_same(got, x @ x, loose=1e3)
    assert any("OutOfMemoryError" in why or "out of memory" in why.lower() for (_, why) in t.fallbacks), \
        dict(t.fallbacks)
    assert_same(a, x)


@pytest.mark.gpu
def test_torch_memory_fraction_falls_back_to_numpy():
    require("torch-cuda")
    import torch

    x = numpy.random.default_rng(1).standard_normal((2048, 2048))
    a = dispatch.asarray(x).to("torch-cuda")
    gc.collect()  # device arrays of earlier tests, held in cycles, freed now rather than under the fraction
    torch.cuda.empty_cache()
    device = dispatch.targets.get("torch-cuda").tdevice
    torch.cuda.set_per_process_memory_fraction(
        (torch.cuda.memory_allocated(device) + 1024) / torch.cuda.get_device_properties(device).total_memory, device)
    try:  # a router without decisions cached by earlier tests; torch-cuda forced, or it may pick cupy
        with router_restored(History()), dispatch.using("torch-cuda"), dispatch.trace() as t:
            got = a @ a
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, device)
    assert_same(got, x @ x, loose=1e3)
    assert any("OutOfMemoryError" in why or "out of memory" in why.lower() for (_, why) in t.fallbacks), \
        dict(t.fallbacks)
    assert_same(a, x)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(DEVICE_BACKENDS))
def test_a_device_failure_mid_call_leaves_device_inputs_alone(monkeypatch, name):
    require(name)
    target = dispatch.targets.get(name)
    monkeypatch.setattr(type(target), "run", lambda self, op, args, kwargs: _failing(FAILURES["cuda out of memory"])())
    x = numpy.arange(12.0).reshape(3, 4)
    a = dispatch.asarray(x).to(name)
    out = dispatch.zeros((3, 4)).to(name)
    # Forced: routed, the call may go to another engine on the same device (cupy and torch-cuda
    # share CUDA memory), or to NumPy where a calibration prices it so, and never reach `run`.
    with dispatch.using(name), dispatch.trace() as t:
        got = dispatch.multiply(a, 2.0, out=out)
    assert got is out and out.device == a.device
    assert_same(out, x * 2)
    assert_same(a, x)
    assert any("CUDA out of memory" in why for (_, why) in t.fallbacks)
