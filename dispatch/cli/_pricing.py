"""Pricing calls for the command line: with a calibration (this machine's, or one saved on
another machine) through ``dispatch.routing.cost.estimate_call``, or with the seed roofline of
``dispatch.cli.estimate`` where there is none (the cold start, labelled as such).

Two shapes of answer:

- per *target* (``numpy``, ``torch-cpu``, ``cupy``...): what a profile records and what
  ``analyze --hardware`` shows, seconds per call;
- per *tier* (``Backend.SCALAR``, ``SIMD``, ``GPU``): the ``analyze`` report's model estimate of
  a static call site, where only the op and an element count are known. A calibrated tier is
  its best target: SCALAR is ``numpy``, SIMD the other host engines, GPU the device engines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from converters import NUMPY_CATALOG, SKLEARN_CATALOG
from dispatch import targets
from dispatch.base.tiers import Backend
from dispatch.cli.estimate import estimate_seconds
from dispatch.routing import calibration
from dispatch.routing.calibration import Calibration
from dispatch.routing.cost import estimate_call

__all__ = [
    "CalibratedEstimator",
    "calibration_label",
    "price_call",
    "roofline_by_target",
    "stored_calibration_path",
    "this_machine_calibration",
]

ROOFLINE = "seed-roofline"


def stored_calibration_path() -> Path:
    """Where this machine's calibration is (or would be) stored."""

    return calibration.cache_dir() / f"calibration-{calibration.fingerprint()}.json"


def this_machine_calibration() -> Calibration | None:
    """This machine's stored calibration, or ``None``. An empty cache answers without probing
    the GPUs (which the fingerprint needs), so uncalibrated commands stay quick."""

    folder = calibration.cache_dir()
    if not folder.is_dir() or not any(folder.glob("calibration-*.json")):
        return None
    return calibration.load()


def calibration_label(cal: Calibration, path: str | Path | None = None) -> dict[str, Any]:
    """What a report says about the calibration it priced with."""
    return {
        "fingerprint": cal.fingerprint,
        "path": str(path) if path is not None else None,
        "created": cal.created,
        "quick": cal.quick,
        "cpu": cal.machine.get("cpu"),
        "gpus": [g.get("name") for g in cal.machine.get("gpus", [])],
        "targets": sorted(cal.targets),
    }


def price_call(op: str, shapes: list[list[int]], dtypes: list[str], cal: Calibration) -> dict[str, float]:
    """Seconds per call on every target of ``cal`` (inputs on the host), or ``{}`` where the
    op is outside the NumPy catalog (ufunc methods, functions dispatch does not route)."""
    try:
        return estimate_call(op, shapes, dtypes, cal, resident="cpu")
    except (KeyError, AttributeError, TypeError, ValueError):
        return {}


def tiers_here() -> set[Backend]:
    """The tiers of the targets this machine has (SCALAR always: NumPy)."""
    return {Backend.SCALAR} | {target.tier for target in targets.available().values()}


def tiers_of(cal: Calibration) -> set[Backend]:
    """The tiers of the targets a calibration measured."""
    return {Backend.SCALAR} | {_tier_of(name, data) for name, data in cal.targets.items()}


def _tier_of(name: str, data: dict[str, Any]) -> Backend:
    if name == "numpy":
        return Backend.SCALAR
    return Backend.SIMD if str(data.get("device", "cpu")) == "cpu" else Backend.GPU


def _catalog_entry(op: str) -> tuple[str, Any] | None:
    """The catalog name and entry of a traced op: a NumPy catalog name, or a scikit-learn
    estimator's method as the accelerator traces it (``"PCA.fit_transform"`` is ``PCA``)."""

    if op in NUMPY_CATALOG:
        return op, NUMPY_CATALOG[op]
    head = op.split(".")[0]
    if head in SKLEARN_CATALOG:
        return head, SKLEARN_CATALOG[head]
    return None


def roofline_by_target(op: str, shapes: list[list[int]], available: list[str]) -> dict[str, float]:
    """The seed roofline's seconds per call, with each tier standing for the target that
    would run it here: SCALAR ``numpy``, SIMD ``torch-cpu``, GPU the first GPU target in
    ``available``. Host-only work has a ``numpy`` entry only; an op in no catalog (a ufunc
    method, indexing) has none."""

    found = _catalog_entry(op)
    if found is None:
        return {}
    name, entry = found
    n = max((math.prod(s) for s in shapes), default=1)
    by_tier = estimate_seconds(name, entry.complexity, int(n))
    names = {Backend.SCALAR: "numpy"}
    simd = next((t for t in targets.registry.host_names() if t in available and targets.get(t).tier is Backend.SIMD),
                None)
    if simd is not None:
        names[Backend.SIMD] = simd
    gpu = next((t for t in targets.registry.gpu_names() if t in available), None)
    if gpu is not None:
        names[Backend.GPU] = gpu
    return {names[tier]: seconds for tier, seconds in by_tier.items() if tier in names}


class CalibratedEstimator:
    """The ``analyze`` estimator priced with a calibration: per tier, its best target's time
    for one call on ``n`` float64 elements with the data on the host (two square operands for
    a matrix product, one square operand for a factorisation, one vector otherwise). Ops the
    calibration cannot price (scikit-learn, PyTorch, ops outside the NumPy catalog) fall back
    to the seed roofline; ``source_of(op)`` says which model priced an op."""

    def __init__(self, cal: Calibration, path: str | Path | None = None) -> None:
        self.cal = cal
        self.tiers = {name: _tier_of(name, data) for name, data in cal.targets.items()}
        self.model = {
            "name": "calibration",
            "kind": "model estimate",
            "note": "this machine's calibration, data on the host; the seed roofline where it cannot price an op",
            "calibration": calibration_label(cal, path),
            "fallback": ROOFLINE,
        }
        self._sources: dict[str, str] = {}

    def _shapes(self, op: str, n: int, shape: Sequence[int] | None = None) -> list[list[int]]:
        entry = NUMPY_CATALOG.get(op)
        work = entry.work if entry is not None else "map"
        if shape is not None and len(shape) == 2 and work in ("matmul", "cubic"):
            m, k = (int(d) for d in shape)  # the source shows the matrix: a tall one is not a square one
            return [[m, k], [k, k]] if work == "matmul" else [[m, k]]
        side = max(1, round(math.sqrt(n)))
        if work == "matmul":
            return [[side, side], [side, side]]
        if work == "cubic":
            return [[side, side]]
        return [[n]]

    def __call__(self, op: str, complexity: Any, n: int, shape: Sequence[int] | None = None) -> dict[Backend, float]:
        entry = NUMPY_CATALOG.get(op)
        if entry is None:
            self._sources[op] = ROOFLINE
            return estimate_seconds(op, complexity, n, shape)
        shapes = self._shapes(op, n, shape)
        priced = price_call(op, shapes, ["float64"] * len(shapes), self.cal)
        if not priced:
            self._sources[op] = ROOFLINE
            return estimate_seconds(op, complexity, n, shape)
        self._sources[op] = "calibration"
        if entry.work in ("host", "random"):  # runs on NumPy by definition, as in the roofline
            priced = {name: s for name, s in priced.items() if name == "numpy"} or priced
        best: dict[Backend, float] = {}
        for name, seconds in priced.items():
            tier = self.tiers.get(name, Backend.SIMD)
            best[tier] = min(seconds, best.get(tier, math.inf))
        return {tier: best[tier] for tier in Backend if tier in best}

    def source_of(self, op: str) -> str:
        return self._sources.get(op, ROOFLINE)
