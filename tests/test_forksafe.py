"""A child process, made by fork, spawn or forkserver after the parent ran torch-cpu, computes
NumPy's results and never hangs: a forked one leaves the engines it inherited alone."""

from __future__ import annotations

import multiprocessing

import numpy
import pytest

import dispatch
from dispatch import targets

N = 2_000_000
LIMIT_S = 120  # a hung child fails the test instead of blocking the suite


def _child(queue, forced: bool, target: str = "torch-cpu") -> None:
    a = numpy.arange(N, dtype=numpy.float64)
    if forced:
        with dispatch.using(target):  # asked for the parent's engine: NumPy in a forked child, the engine elsewhere
            got = dispatch.sum(dispatch.asarray(a))
    else:
        got = dispatch.sum(dispatch.asarray(a))
    got = numpy.asarray(got)
    why = None if targets.probe(target) is not None else targets.unavailable()[target]
    queue.put((float(got), str(got.dtype), why))


def _in(method: str, forced: bool, target: str = "torch-cpu") -> tuple[float, str, str | None]:
    context = multiprocessing.get_context(method)
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue, forced, target), daemon=True)
    child.start()
    child.join(LIMIT_S)
    if child.is_alive():
        child.kill()
        pytest.fail(f"a child made by {method} hung")
    assert child.exitcode == 0
    return queue.get(timeout=10)


@pytest.fixture(scope="module")
def parent_ran_torch_cpu() -> None:
    if targets.probe("torch-cpu") is None:
        pytest.skip(f"torch-cpu is not available here: {targets.unavailable().get('torch-cpu')}")
    a = dispatch.arange(N, dtype=dispatch.float64)
    with dispatch.using("torch-cpu"):
        numpy.testing.assert_array_equal(numpy.asarray(dispatch.sum(a)), numpy.arange(N, dtype=numpy.float64).sum())


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("forced", [False, True], ids=["routed", "forced"])
def test_a_child_computes_numpys_result(parent_ran_torch_cpu, method, forced):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    got, dtype, why = _in(method, forced)
    assert (got, dtype) == (float(numpy.arange(N, dtype=numpy.float64).sum()), "float64")
    if forced:  # a forked child has torch-cpu off, saying why; a fresh interpreter brings it up
        assert (why is not None and "fork()" in why) == (method == "fork")


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("target", ["cupy", "torch-cuda"])
def test_a_child_after_the_parent_used_a_gpu(method, target):
    """The parent made a CUDA context and ran a sum on the GPU; a child asking for the same
    target gets NumPy's result, never a hang: forked, it runs on NumPy and says why."""
    if targets.probe(target) is None:
        pytest.skip(f"{target} is not available here: {targets.unavailable().get(target)}")
    a = dispatch.arange(N, dtype=dispatch.float64)
    with dispatch.using(target):
        numpy.testing.assert_array_equal(numpy.asarray(dispatch.sum(a)), numpy.arange(N, dtype=numpy.float64).sum())
    got, dtype, why = _in(method, True, target)
    assert (got, dtype) == (float(numpy.arange(N, dtype=numpy.float64).sum()), "float64")
    assert (why is not None and "fork()" in why) == (method == "fork")


def test_a_forked_child_turns_off_what_the_parent_loaded(parent_ran_torch_cpu):
    """The handler itself, run here as in a child: torch's targets become unavailable with the
    reason, then probing again (``reset``) brings them back."""
    from dispatch.base import forksafe

    try:
        forksafe._in_child()
        assert targets.probe("torch-cpu") is None
        assert "fork()" in targets.unavailable()["torch-cpu"]
        with dispatch.using("torch-cpu"):
            a = dispatch.arange(N, dtype=dispatch.float64)
            assert numpy.asarray(dispatch.sum(a)) == numpy.arange(N, dtype=numpy.float64).sum()
    finally:
        for name in list(forksafe.turned_off):
            targets.reset(name)
        forksafe.turned_off.clear()
    assert targets.probe("torch-cpu") is not None
