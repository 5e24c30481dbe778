"""Bringing a target up on a background thread while NumPy serves the program's calls.

``start(name, made)`` imports the target's library, makes the target (``targets.probe``: the
device's context), runs one small call on it (its first kernel) and, on a device, one of each kind
in ``WARM`` that the program's calls so far need (``made``), all on a daemon thread;
``state(name)`` says ``"starting"``, ``"ready"`` or ``"failed"`` (``None`` if never started);
one under way when the program exits is waited for then (``EXIT_WAIT_S``). Calls of a kind that
could run there go to NumPy and are decided again until it is ready; only a call priced to save
more than what is left of the start-up (the whole of it less the seconds it has run, ``elapsed``)
waits for it (``wait``), no longer than it would save (``dispatch.routing.startup.admit``).

The library is imported before ``targets.probe`` takes the registry's lock, so that the program's
own calls, which may probe other targets, never wait on an import. The import holds the GIL for
much of its time (Python code runs it): the program's thread shares the interpreter with it
meanwhile (``benchmarks/cold_start.py --gil`` measures how much that costs).
"""

from __future__ import annotations

import importlib
import time
from _thread import allocate_lock
from typing import TYPE_CHECKING

import numpy as np

from dispatch import targets
from dispatch.base import tuning
from dispatch.base.ops import op_named

if TYPE_CHECKING:
    import threading
    from collections.abc import Collection

__all__ = ["LIBRARY", "elapsed", "seconds_taken", "start", "starting", "state", "wait"]

# The library each target imports: once a library is loaded (by the program, or for another
# target), its import is paid.
LIBRARY = {"torch-cpu": "torch", "torch-cuda": "torch", "torch-mps": "torch", "cupy": "cupy", "dask": "dask"}

# Calls whose first run loads one of the device's libraries (cuBLAS, cuSOLVER, cuFFT) and its
# kernels, up to tenths of a second each with CuPy (benchmarks/RESULTS.md), each with the kinds of
# call that need what it loads. One is run here on tiny inputs, before the target is ready, where
# the program has made such a call (in this run or its earlier ones): its first call there then
# finds it loaded, and a program that makes none does not wait for libraries it never uses.
WARM: dict[str, tuple[str, ...]] = {
    "matmul": ("matmul", "dot", "vdot", "inner", "tensordot", "einsum", "linalg.multi_dot", "linalg.matrix_power",
               "linalg.matmul"),
    "linalg.svd": ("linalg.svd", "linalg.svdvals", "linalg.pinv", "linalg.lstsq", "linalg.matrix_rank", "linalg.cond"),
    "linalg.qr": ("linalg.qr",),
    "linalg.solve": ("linalg.solve", "linalg.inv", "linalg.det", "linalg.slogdet", "linalg.cholesky",
                     "linalg.tensorsolve", "linalg.tensorinv"),
    "linalg.eigh": ("linalg.eigh", "linalg.eigvalsh"),
    "fft.rfft": ("fft.rfft", "fft.irfft", "fft.rfft2", "fft.irfft2", "fft.rfftn", "fft.irfftn", "fft.hfft",
                 "fft.ihfft"),
    "fft.fft": ("fft.fft", "fft.ifft", "fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn"),
}

_states: dict[str, str] = {}
_threads: dict[str, threading.Thread] = {}
_taken: dict[str, float] = {}  # seconds each bring-up took (``python -m dispatch info``, the benchmark)
_began: dict[str, float] = {}  # when each bring-up started (``time.perf_counter``)
_lock = allocate_lock()  # threading's Lock: threading is loaded only where a thread starts

# A bring-up still under way when the program ends is waited for at its exit, this long at most:
# the interpreter stops daemon threads abruptly, and a library's import or a device's context left
# half-made then may abort the process in native code after the script's output.
EXIT_WAIT_S = 30.0
_exit_waits = False  # ``_finish_at_exit`` registered


def start(name: str, made: Collection[str] | None = None) -> bool:
    """Start bringing ``name`` up in the background; whether a thread was started for it now.
    ``made``: the kinds of call (op names) the program has made, which pick the ``WARM`` calls
    run; ``None``, all of them."""
    global _exit_waits
    targets.probe("numpy")  # registered now: the program's own calls never wait on the registry's lock for it
    with _lock:
        if name in _states:
            return False
        if targets.registry.tried(name):
            _states[name] = "ready" if targets.registry.is_up(name) else "failed"
            return False
        _states[name] = "starting"
        _began[name] = time.perf_counter()
        import threading  # here: a script that brings nothing up never loads it

        warm = tuple(call for call, needed_by in WARM.items() if made is None or any(op in made for op in needed_by))
        thread = threading.Thread(target=_bring_up, args=(name, LIBRARY.get(name), warm),
                                  name=f"dispatch-bringup-{name}", daemon=True)
        if not _exit_waits:
            import atexit

            atexit.register(_finish_at_exit)  # after the handlers registered before: run before them
            _exit_waits = True
        _threads[name] = thread
    thread.start()
    return True


def _finish_at_exit() -> None:
    """The interpreter is exiting: let the bring-ups under way end first (``EXIT_WAIT_S``)."""
    deadline = time.perf_counter() + EXIT_WAIT_S
    for thread in tuple(_threads.values()):
        thread.join(max(0.0, deadline - time.perf_counter()))


def _bring_up(name: str, library: str | None, warm: tuple[str, ...]) -> None:
    began = time.perf_counter()
    try:
        if library is not None:
            if library == "torch":
                tuning.torch_starts()  # as ``TorchTarget`` would, before torch loads
            module = importlib.import_module(library)
            _context(name, module)
        target = targets.probe(name)
        if target is not None:
            x = target.from_host(np.ones(16))
            target.run(op_named("add"), (x, x), {})
            target.synchronize()
            if warm and not target.device.is_host:
                _warm(target, warm)
        ok = target is not None
    except Exception:  # a failed bring-up leaves the target to the router's own probing, which keeps the reason
        ok = False
    _taken[name] = time.perf_counter() - began
    _states[name] = "ready" if ok else "failed"


def _warm(target: targets.Target, calls: tuple[str, ...]) -> None:
    """One small call of each kind in ``calls`` on a device's target; one it refuses or fails
    leaves its first real call to pay, and the target up all the same."""
    square = target.from_host(np.eye(8) + 0.5)
    for name in calls:
        args = (square, square) if name in ("matmul", "linalg.solve") else (square,)
        try:
            target.run(op_named(name), args, {})
            target.synchronize()
        except Exception:  # the program's own call of that kind reports its failure
            continue


def _context(name: str, module: object) -> None:
    """The device's context made before ``targets.probe`` holds the registry's lock (0.2-0.6 s)."""
    try:
        if name == "torch-cuda":
            module.cuda.init()  # type: ignore[attr-defined]
        elif name == "cupy":
            module.cuda.runtime.getDeviceCount()  # type: ignore[attr-defined]
            module.zeros(1)  # type: ignore[attr-defined]
    except Exception:  # no device: the probe says so, and keeps the reason
        pass


def state(name: str) -> str | None:
    """``"starting"``, ``"ready"``, ``"failed"``, or ``None`` where no bring-up was started."""
    return _states.get(name)


def starting() -> list[str]:
    """The targets being brought up now."""
    return [name for name, state in tuple(_states.items()) if state == "starting"]


def wait(name: str, timeout: float | None = None) -> str | None:
    """Wait for ``name``'s bring-up to end, ``timeout`` seconds at most; its state then."""
    thread = _threads.get(name)
    if thread is not None:
        thread.join(timeout)
    return state(name)


def elapsed(name: str) -> float:
    """Seconds since ``name``'s bring-up started (0 where none was)."""
    began = _began.get(name)
    return time.perf_counter() - began if began is not None else 0.0


def seconds_taken() -> dict[str, float]:
    """Seconds each finished bring-up took, by target."""
    return dict(_taken)
