"""Pricing calls for the command line: each call's work (flops and bytes, from its shapes) over
the throughputs of a calibration (this machine's, or one saved on another machine), or over the
seed's defaults where there is none (the cold start, labelled as such); ``dispatch.cli.estimate``
has the model.

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
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from converters import NUMPY_CATALOG, SKLEARN_CATALOG
from dispatch import targets
from dispatch.base.tiers import Backend
from dispatch.cli.estimate import Throughput, Work, estimate_seconds, shapes_for, static_work, work_of
from dispatch.routing import calibration
from dispatch.routing.calibration import Calibration

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


def _itemsize(dtypes: Sequence[str]) -> tuple[int, float]:
    """The widest element's bytes, and a factor on the flops for complex numbers (a complex
    multiply is about four real ones)."""
    found = [np.dtype(d) for d in dtypes] or [np.dtype("float64")]
    widest = max(d.itemsize for d in found)
    return widest, 4.0 if any(d.kind == "c" for d in found) else 1.0


def _price(work: Work, cal: Calibration, dtype: str, factor: float) -> dict[str, float]:
    priced = {}
    for name, data in cal.targets.items():
        if work.host and name != "numpy":
            continue
        throughput = Throughput.calibrated(data, dtype)
        seconds = throughput.seconds(replace(work, flops=work.flops * factor)) if throughput else None
        if seconds is not None:
            priced[name] = seconds
    return priced


def price_call(op: str, shapes: list[list[int]], dtypes: list[str], cal: Calibration) -> dict[str, float]:
    """Seconds per call on every target of ``cal`` (inputs on the host): the call's work over
    each target's calibrated throughput (``dispatch.cli.estimate``). ``{}`` where the op is
    outside the NumPy catalog (ufunc methods, indexing, functions dispatch does not route)."""
    try:
        itemsize, factor = _itemsize(dtypes)
    except TypeError:
        itemsize, factor = 8, 1.0
    work = work_of(op, shapes, itemsize)
    if work is None:
        return {}
    return _price(work, cal, "float32" if itemsize * (1 if factor == 1 else 0.5) <= 4 else "float64", factor)


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
    if name in NUMPY_CATALOG:
        work = work_of(name, shapes)
    else:
        work = static_work(name, entry.complexity, int(max((math.prod(s) for s in shapes), default=1)))
    if work is None:
        return {}
    names = {Backend.SCALAR: "numpy"}
    simd = next((t for t in targets.registry.host_names() if t in available and targets.get(t).tier is Backend.SIMD),
                None)
    if simd is not None and not work.host:
        names[Backend.SIMD] = simd
    gpu = next((t for t in targets.registry.gpu_names() if t in available), None)
    if gpu is not None and not work.host:
        names[Backend.GPU] = gpu
    return {target: Throughput.seed(tier).seconds(work) or 0.0 for tier, target in names.items()}


class CalibratedEstimator:
    """The ``analyze`` estimator priced with a calibration: per tier, its best target's time
    for one call on ``n`` float64 elements with the data on the host (the operands
    ``dispatch.cli.estimate.shapes_for`` gives: the matrix the source shows, else square ones).
    Ops outside the NumPy catalog (scikit-learn, PyTorch) fall back to the seed roofline;
    ``source_of(op)`` says which model priced an op."""

    def __init__(self, cal: Calibration, path: str | Path | None = None) -> None:
        self.cal = cal
        self.tiers = {name: _tier_of(name, data) for name, data in cal.targets.items()}
        self.model = {
            "name": "calibration",
            "kind": "model estimate",
            "note": "the call's flops and bytes over this machine's calibrated throughputs, data on the host; "
                    "the seed roofline where the calibration cannot price an op",
            "calibration": calibration_label(cal, path),
            "fallback": ROOFLINE,
        }
        self._sources: dict[str, str] = {}

    def __call__(self, op: str, complexity: Any, n: int, shape: Sequence[int] | None = None) -> dict[Backend, float]:
        priced = {}
        if op in NUMPY_CATALOG:
            work = work_of(op, shapes_for(op, n, shape))
            priced = _price(work, self.cal, "float64", 1.0) if work is not None else {}
        if not priced:
            self._sources[op] = ROOFLINE
            return estimate_seconds(op, complexity, n, shape)
        self._sources[op] = "calibration"
        best: dict[Backend, float] = {}
        for name, seconds in priced.items():
            tier = self.tiers.get(name, Backend.SIMD)
            best[tier] = min(seconds, best.get(tier, math.inf))
        return {tier: best[tier] for tier in Backend if tier in best}

    def source_of(self, op: str) -> str:
        return self._sources.get(op, ROOFLINE)
