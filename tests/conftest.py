"""One test-parameter factory across backends (autoray's ``tests/conftest.py`` style).

Every target dispatch knows (``dispatch.targets.names()``) is a parameter id: ``numpy``,
``torch-cpu``, ``cupy``, ``torch-cuda``, ``torch-mps``. Device targets carry the ``gpu``
marker, and a target this machine lacks is skipped with the reason probing found, so the
same suite runs here and on a GPU machine. NumPy itself is always the reference.

Tests that run an op on a backend report whether it ran there natively or fell back to NumPy
(``record_run``); the terminal summary prints the counts per backend.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator

# The tests route by the seed's table or by calibrations they make: never by one this machine
# stored for its user (set before dispatch loads anything).
os.environ["DISPATCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="dispatch-tests-")
# ...nor by what earlier runs of a script learned (tests/test_startup.py turns it on where it tests it)
os.environ["DISPATCH_LEARN"] = "0"
# Dask's scratch space (its workers' spill files and locks), /tmp/dask-scratch-space otherwise:
# beside the cache, and removed with it as the process exits (below)
os.environ["DASK_TEMPORARY_DIRECTORY"] = os.environ["DISPATCH_CACHE_DIR"] + "-dask"

import pytest

import dispatch
import dispatch.targets

# Removed after the exit handlers that write there (what a script's runs learned, Dask's locks):
# those are registered later, as the tests run, and atexit runs the last registered first.
for _folder in (os.environ["DISPATCH_CACHE_DIR"], os.environ["DASK_TEMPORARY_DIRECTORY"]):
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)

BACKENDS = tuple(dispatch.targets.names())
DEVICE_BACKENDS = frozenset(dispatch.targets.registry.gpu_names())


def backend_param(name: str) -> object:
    """``pytest.param(name)`` with its id, and the ``gpu`` marker for device targets."""
    return pytest.param(name, id=name, marks=[pytest.mark.gpu] if name in DEVICE_BACKENDS else [])


def backend_params(names: tuple[str, ...] = BACKENDS) -> list[object]:
    """Parameters for every backend in ``names`` (all of them by default)."""
    return [backend_param(n) for n in names]


def require(name: str) -> None:
    """Skip unless the target ``name`` works here; the skip says why it does not."""
    if dispatch.targets.probe(name) is None:
        pytest.skip(f"{name} is not available here: {dispatch.targets.unavailable().get(name)}")


def any_device() -> bool:
    return any(dispatch.targets.probe(n) is not None for n in DEVICE_BACKENDS)


@pytest.fixture(params=backend_params())
def backend(request: pytest.FixtureRequest) -> str:
    """Each available target's name; unavailable ones skip with their reason."""
    require(request.param)
    return request.param


@pytest.fixture(autouse=True)
def _dask_in_the_calling_thread(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests with the ``dask`` backend parameter compute in the calling thread (Dask's
    synchronous scheduler): the same graphs and values as with its thread pool, without the
    pool's cost on every one of the suite's many small computations."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("backend") != "dask":
        yield
        return
    import dask

    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(params=["compiled", "python"])
def operator_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each path dispatch may run an operator on: the compiled one, and the Python one."""
    from dispatch.arrays import _compiled

    if request.param == "compiled":
        if not _compiled.ACTIVE:
            pytest.skip(f"the compiled fast path is {_compiled.STATUS}")
        yield request.param
        return
    with _compiled.python_path():
        yield request.param


@pytest.fixture
def forced(backend: str) -> Iterator[str]:
    """The test body runs with every call forced onto ``backend`` (``dispatch.using``)."""
    with dispatch.using(backend):
        yield backend


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` without a backend parameter skip where no device is present."""
    if any_device():
        return
    skip = pytest.mark.skip(reason="no CUDA / ROCm / MPS device here")
    for item in items:
        callspec = getattr(item, "callspec", None)
        if item.get_closest_marker("gpu") and not (callspec and "backend" in callspec.params):
            item.add_marker(skip)


# ---- native-vs-fallback counts -------------------------------------------------------------------------


def record_run(request: pytest.FixtureRequest, backend: str, op: str, native: list[bool]) -> None:
    """Note, per call of ``op`` forced onto ``backend``, whether it ran there or on NumPy."""
    request.node.user_properties.append(("dispatch_run", (backend, op, sum(native), len(native))))


# backend -> op -> [calls run natively, calls]
_runs: dict[str, dict[str, list[int]]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for key, value in report.user_properties:  # also sent back by pytest-xdist's workers
        if key == "dispatch_run":
            backend, op, native, calls = value
            counts = _runs.setdefault(backend, {}).setdefault(op, [0, 0])
            counts[0] += native
            counts[1] += calls


def native_counts(backend: str) -> tuple[int, int, int, int, int]:
    """Ops that ran natively in every call, in some, in none; calls native, calls in all."""
    ops = _runs.get(backend, {})
    every = sum(1 for n, c in ops.values() if n == c)
    some = sum(1 for n, c in ops.values() if 0 < n < c)
    none = sum(1 for n, c in ops.values() if n == 0)
    return every, some, none, sum(n for n, _ in ops.values()), sum(c for _, c in ops.values())


def pytest_terminal_summary(terminalreporter: object, exitstatus: int, config: pytest.Config) -> None:
    if not _runs:
        return
    tr = terminalreporter
    tr.section("dispatch: calls forced onto each backend, native or on NumPy")  # type: ignore[attr-defined]
    for backend in sorted(_runs):
        every, some, none, native, calls = native_counts(backend)
        tr.write_line(  # type: ignore[attr-defined]
            f"{backend:11s} ops native in every call: {every:4d}, in some: {some:4d}, never (NumPy ran): {none:4d}"
            f"  | calls native: {native:6d} of {calls:6d}")
