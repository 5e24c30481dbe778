"""The host shortcut's floors, and where they are known without the router.

A call whose host arrays hold at most its op's floor of elements runs on NumPy without asking the
router (``dispatch.arrays._call.host_shortcut``): no other target can be chosen for it. The router
gives each op's floor from its policy (``Router.host_floor``). Unless the script's earlier runs
name another target (``learned.names_others``), the floors need no router, and a script whose
calls all stay under them never loads the routing machinery (the router, its regions and
planner, the start-up pricing, the history: about a third of dispatch's own start-up). Where this
machine has no calibration stored, the seed's table routes and its floors are given here; where
its calibration is stored, the cost policy routes and its floors are given here from the
calibration's models (``cost.numpy_floor``), as the router gives them (a calibration that cannot
route, or one stored for another machine, is the router's to say so: it is loaded). The first
call over a floor loads the router (``dispatch.arrays._call``); its policy gives the same floors.

Under the seed's table a target comes up only where the program loaded its library itself
(``startup.admit``: the table prices no start-up, so it starts none). While neither torch nor
CuPy is loaded, then, every host call under Dask's size (``cluster.LIVE_ELEMENTS``) runs on
NumPy whatever the table says, and its floor is that size (``IDLE``): the router is not loaded
to say so. The program importing either library, or the router loading (a trace, a target
forced), puts the table's floors back (an import hook, ``import_hooks.after_import``; ``use``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from dispatch import cluster, targets
from dispatch.base import cachefiles, import_hooks, tuning
from dispatch.base.tiers import MoeThresholds, OpComplexity
from dispatch.routing import learned

__all__ = ["ENGINES", "IDLE", "SMALL", "bounded", "host_floor", "seed_floor", "under_seed_floor", "use"]

# Host calls of at most this many elements run on NumPy under every policy, without probing any
# other target (which would import torch or CuPy): no engine's call overhead (microseconds for
# torch, a launch and a transfer for a GPU) is repaid on so little data.
SMALL = 1 << 8

# The libraries whose loading lets the seed's table choose a target other than NumPy, and the
# floor while none is loaded (bounded under Dask's size).
ENGINES = ("torch", "cupy")
IDLE = 1 << 62

_SEED = MoeThresholds()  # the seed's table, the router's until it is loaded (``set_selector`` is the router's)
_router: Any = None  # the process's router, once loaded
_idle: list = []  # the ops given the floor ``IDLE``
_seed_only: bool | None = None  # whether the seed's floors hold without it (checked at the first floor)
_UNREAD = object()
_models: Any = _UNREAD  # the stored calibration's models where they give the floors without it, else None
_known: dict[str, int] = {}  # the cost policy's floors found from them, by representative op


def seed_floor(thresholds: MoeThresholds, complexity: OpComplexity) -> int:
    """The seed table's floor for ops of ``complexity``: the size up to which it picks neither the
    SIMD nor the GPU tier."""
    return min(v for v in (thresholds.simd[complexity], thresholds.gpu[complexity], 2**62) if v is not None)


def bounded(floor: int) -> int:
    """A policy's floor as the host shortcut takes it: at least ``SMALL``, and under
    ``cluster.LIVE_ELEMENTS`` (larger calls may need Dask: the router decides)."""
    return min(max(floor, SMALL), cluster.LIVE_ELEMENTS - 1)


def use(router: Any) -> None:
    """The router, loaded: it gives the floors from now on."""
    global _router
    _router = router
    _put_back()


def host_floor(op: Any) -> int:
    """Host arrays of ``op`` of at most this size run on NumPy without asking the router (set on
    ``op`` as its ``floor``): the seed's where it holds without the router, else the router's,
    loaded for it."""
    if _router is None:
        if _seed_floors():
            if _engine_loaded():
                floor = bounded(seed_floor(_SEED, op.complexity))
            else:
                floor = bounded(IDLE)
                _idle.append(op)
            op.floor = floor
            return floor
        models = _calibrated()
        if models is not None:
            from dispatch.routing import cost  # here: the cost models load only where a calibration is stored

            floor = op.floor = bounded(cost.numpy_floor(models, targets.registry.priced_names(), op, _known))
            return floor
        importlib.import_module("dispatch.routing.router")  # (which hands itself over: ``use``)
    return _router.host_floor(op)


def under_seed_floor(op: Any, n: int) -> bool:
    """Whether ``n`` elements of ``op`` stay on NumPy by the seed's table, known without loading
    the router: it is not loaded, the seed's floors hold, and ``n`` is under ``op``'s (a draw the
    router would place otherwise, ``dispatch.random``)."""
    return _router is None and _seed_floors() and n <= host_floor(op)


def _seed_floors() -> bool:
    """Whether the seed's floors hold without the router: no calibration is stored here (any,
    even one for other libraries: the router says when one no longer applies), and the script's
    earlier runs name no other target. Checked once, at the first floor asked, where the router
    would have started: the process's tuning, and this run kept at its end."""
    global _seed_only
    if _seed_only is None:
        tuning.routing_starts()
        learned.start()
        try:
            stored = bool(cachefiles.calibrations())
        except ValueError:  # a DISPATCH_CACHE_DIR that names no folder: the router's loading says so
            stored = True
        _seed_only = not stored and not learned.names_others()
    return _seed_only


def _calibrated() -> Any:
    """The cost models of this machine's stored calibration, where they give the floors as the
    router would (its cost policy's): the script's earlier runs name no other target, and the
    calibration loads and makes models; else ``None``, and the router gives the floors. Read once."""
    global _models
    if _models is _UNREAD:
        _models = None
        if not learned.names_others():
            from dispatch.routing import calibration, cost  # here: read only where a calibration is stored

            try:
                found = calibration.load()
                _models = cost.models_from(found) if found is not None else None
            except Exception:  # whatever fails, the router's loading meets again, and says so
                _models = None
    return _models


def _engine_loaded() -> bool:
    """Whether the program has loaded an engine's library (``ENGINES``); if not, the seed's floors
    are put back once it does."""
    if any(name in sys.modules for name in ENGINES):
        return True
    if not _idle:  # the first op given ``IDLE``: the hook's one registration
        import_hooks.after_import(ENGINES, _engine_loads)
    return False


def _engine_loads(module: Any) -> None:
    """An engine's library has loaded: the floors ``IDLE`` gave are asked again."""
    _put_back()


def _put_back() -> None:
    """The ops given ``IDLE`` ask for their floors again (the seed's table's, or the router's)."""
    while _idle:
        op = _idle.pop()
        op.floor = op.trip_floor = -1
