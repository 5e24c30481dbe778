"""A target is one module and its declaration (``dispatch.targets.registry``): registering a
new one is all it takes to force calls onto it, see it listed and have it counted among the
host (or GPU) targets; unregistering it leaves everything as it was.

The new target here is NumPy under another name, defined in this one place."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy
import pytest
from helpers import assert_same

import dispatch
from dispatch import targets
from dispatch.cli import info
from dispatch.routing import history, router
from dispatch.targets import registry
from dispatch.targets.numpy_target import NumpyTarget
from dispatch.targets.protocol import Target, Unavailable


class NumpyTwin(NumpyTarget):
    """NumPy itself, under another name, keeping the names of the ops it ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def run(self, op, args, kwargs):
        self.ran.append(op.name)
        return super().run(op, args, kwargs)


TWIN = registry.TargetSpec("numpy-twin", library="numpy", device="cpu", make=NumpyTwin, rank=5)


def _no_gpu() -> Target:
    raise Unavailable("a GPU target for the test, never there")


NOWHERE = registry.TargetSpec("test-gpu", library="torch", device="cuda", make=_no_gpu, rank=25)


def _lists() -> tuple:
    return (tuple(registry.names()), tuple(registry.host_names()), tuple(registry.gpu_names()),
            tuple(registry.priced_names()), tuple(registry.gpu_libraries()))


@pytest.fixture
def twin():
    before = _lists()
    registry.register(TWIN)
    router.clear_decisions()
    try:
        yield targets.get("numpy-twin")
    finally:
        registry.unregister("numpy-twin")
        router.clear_decisions()
    assert _lists() == before


def test_the_builtin_targets_are_registered_in_rank_order():
    assert tuple(registry.names()) == ("numpy", "torch-cpu", "cupy", "torch-cuda", "torch-mps", "dask")
    assert tuple(registry.host_names()) == ("numpy", "torch-cpu")
    assert tuple(registry.gpu_names()) == ("cupy", "torch-cuda", "torch-mps")
    assert tuple(registry.priced_names()) == ("numpy", "torch-cpu", "cupy", "torch-cuda", "torch-mps")
    assert tuple(registry.gpu_libraries()) == ("cupy", "torch")
    assert [(s.name, s.device_kind) for s in registry.specs()] == [
        ("numpy", "host"), ("torch-cpu", "host"), ("cupy", "gpu"), ("torch-cuda", "gpu"), ("torch-mps", "gpu"),
        ("dask", "cluster")]
    # what each declares: dtypes it holds, counterparts it spells otherwise
    assert registry.spec("torch-mps").dtypes < registry.spec("torch-cuda").dtypes
    assert numpy.dtype("float64") not in registry.spec("torch-mps").dtypes
    assert numpy.dtype("uint32") not in registry.spec("torch-cpu").dtypes
    assert numpy.dtype("uint32") in registry.spec("cupy").dtypes
    assert numpy.dtype("U1") not in registry.spec("cupy").dtypes
    assert "linalg.svd" in registry.spec("torch-cpu").counterparts
    assert registry.spec("numpy").dtypes is None  # every dtype


def test_the_router_reads_its_lists_from_the_registry(twin):
    assert router.GPU_TARGETS is registry.gpu_names() and router.PRICED is registry.priced_names()
    assert history.HOST_TARGETS is registry.host_names()
    assert "numpy-twin" in router.PRICED and "numpy-twin" in history.HOST_TARGETS
    assert "numpy-twin" not in router.GPU_TARGETS


def test_calls_forced_onto_a_registered_target_run_there_with_numpys_results(twin):
    rng = numpy.random.default_rng(0)
    m = rng.standard_normal((6, 6)) + 6 * numpy.eye(6)
    v = numpy.arange(12, dtype=numpy.int32)
    a, b = dispatch.asarray(m), dispatch.asarray(v)
    calls = [
        (lambda: dispatch.add(a, 1.5), lambda: numpy.add(m, 1.5)),                 # a ufunc
        (lambda: b * 3, lambda: v * 3),                                            # an operator
        (lambda: dispatch.sum(b), lambda: numpy.sum(v)),                           # a reduction to a scalar
        (lambda: a.mean(axis=0), lambda: m.mean(axis=0)),                          # a reduction along an axis
        (lambda: dispatch.linalg.solve(a, a[:, 0]), lambda: numpy.linalg.solve(m, m[:, 0])),  # linalg
        (lambda: a @ a, lambda: m @ m),
        (lambda: b[2:9:3], lambda: v[2:9:3]),                                      # indexing
        (lambda: b[dispatch.asarray([0, 5, 11])], lambda: v[[0, 5, 11]]),
    ]
    with dispatch.using("numpy-twin"), dispatch.trace() as t:
        assert dispatch.get_backend() == "numpy-twin"
        got = [call() for call, _ in calls]
    for g, (_, want) in zip(got, calls, strict=True):
        assert_same(g, want())
    assert {"add", "multiply", "sum", "mean", "linalg.solve", "matmul", "__getitem__"} <= set(twin.ran)
    assert t.records and {r.target for r in t.records} == {"numpy-twin"}
    assert {r.reason for r in t.records} == {"forced numpy-twin"}
    assert dispatch.get_backend() == "auto"


def test_set_backend_takes_a_registered_target(twin):
    dispatch.set_backend("numpy-twin")
    try:
        x = numpy.linspace(0.0, 1.0, 9)
        assert_same(dispatch.cumsum(dispatch.asarray(x)), numpy.cumsum(x))
    finally:
        dispatch.set_backend("auto")
    assert twin.ran == ["asarray", "cumsum"]  # made there, then computed there


def test_info_lists_a_registered_target(twin):
    found = info.collect()["targets"]
    assert list(found)[:3] == ["numpy", "numpy-twin", "torch-cpu"]
    assert found["numpy-twin"] == {"available": True, "device": "cpu", "tier": "SCALAR"}
    assert "\n  numpy-twin  available    SCALAR on cpu\n" in info.render(info.collect())


def test_unregistering_restores_the_previous_state():
    before = _lists()
    registry.register(TWIN)
    assert targets.probe("numpy-twin") is not None
    registry.unregister("numpy-twin")
    assert _lists() == before
    assert "numpy-twin" not in info.collect()["targets"]
    with pytest.raises(ValueError, match="unknown backend 'numpy-twin'; choose one of: auto, numpy, torch-cpu"):
        dispatch.set_backend("numpy-twin")
    with pytest.raises(ValueError, match="unknown target 'numpy-twin'; known: numpy, torch-cpu"):
        targets.probe("numpy-twin")
    with pytest.raises(KeyError):
        registry.unregister("numpy-twin")


def test_a_gpu_target_takes_its_place_among_the_gpu_targets_and_reports_why_it_is_missing():
    before = _lists()
    registry.register(NOWHERE)
    try:
        assert tuple(registry.gpu_names()) == ("cupy", "test-gpu", "torch-cuda", "torch-mps")
        assert registry.names_on("cuda") == ["cupy", "test-gpu", "torch-cuda"]
        assert "test-gpu" in router.PRICED and "test-gpu" not in registry.host_names()
        assert targets.probe("test-gpu") is None
        assert targets.unavailable()["test-gpu"] == "a GPU target for the test, never there"
        assert info.collect()["targets"]["test-gpu"] == {"available": False,
                                                         "reason": "a GPU target for the test, never there"}
        with pytest.raises(RuntimeError, match="target 'test-gpu' is not available here: a GPU target for the test"):
            dispatch.set_backend("test-gpu")
    finally:
        registry.unregister("test-gpu")
    assert _lists() == before


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="a target called 'numpy' is registered already"):
        registry.register(registry.TargetSpec("numpy", library="numpy", device="cpu", make=NumpyTwin))
    with pytest.raises(ValueError, match="a target called 'auto' is registered already"):
        registry.register(registry.TargetSpec("auto", library="numpy", device="cpu", make=NumpyTwin))
    with pytest.raises(TypeError, match="register takes a TargetSpec, not NumpyTwin"):
        registry.register(NumpyTwin())
    assert "auto" not in registry.names()


def test_the_protocol_is_abstract():
    """A target missing part of the protocol cannot be made."""

    class Partial(Target):
        def run(self, op, args, kwargs):
            return None

    with pytest.raises(TypeError, match="abstract"):
        Partial()
    assert {"run", "from_host", "to_host", "adopt", "owns", "dtype_of", "assign", "view"} == Target.__abstractmethods__


def test_an_arrays_engine_is_its_librarys_first_target_on_its_device(twin):
    assert targets.engine_of(numpy.ones(3)).name == "numpy"  # ranked before the twin, same library and device
    torch = pytest.importorskip("torch")
    if targets.probe("torch-cpu") is None:
        pytest.skip(targets.unavailable()["torch-cpu"])
    assert targets.engine_of(torch.ones(3)).name == "torch-cpu"
    registry.disable("torch-cpu", "turned off for the test")
    try:
        with pytest.raises(RuntimeError, match="target 'torch-cpu' is not available here: turned off for the test"):
            targets.engine_of(torch.ones(3))
    finally:
        registry.reset("torch-cpu")


def test_a_declared_targets_module_is_imported_at_its_first_probe(tmp_path):
    """``import dispatch`` and calls on NumPy load no adapter but NumPy's; probing a target
    imports its module, which completes its registration (its dtypes and counterparts)."""
    code = ("import sys, numpy, dispatch as np\n"
            "a = np.arange(10.0); float(np.sum(a * 2))\n"
            "from dispatch import targets\n"
            "loaded = lambda: sorted(m for m in sys.modules if m.endswith('_target') or m.endswith('_fixes'))\n"
            "print(loaded())\n"
            "print(targets.registry.spec('dask').dtypes is None, targets.registry.spec('dask').fork_safe)\n"
            "targets.probe('dask')\n"
            "print(loaded())\n"
            "spec = targets.registry.spec('dask')\n"
            "print(spec.dtypes is None, dict(spec.counterparts) != {})\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_")}
    env.update(DISPATCH_CACHE_DIR=str(tmp_path), DISPATCH_LEARN="0")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['dispatch.targets.numpy_target']", "True True",
                                        "['dispatch.targets.dask_target', 'dispatch.targets.numpy_target']",
                                        "False True"]


def test_a_declared_target_whose_module_completes_nothing_is_unavailable():
    registry.declare("test-declared", "json", library="numpy", device="cpu", rank=7)  # json completes no target
    try:
        assert targets.probe("test-declared") is None
        assert targets.unavailable()["test-declared"] == "its module did not complete its registration"
    finally:
        registry.unregister("test-declared")
    assert "test-declared" not in registry.names()
