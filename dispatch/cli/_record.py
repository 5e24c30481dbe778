"""The profile ``dispatch run --profile OUT.json`` writes (version 1, what ``analyze --profile``
reads; see ``dispatch/cli/_profile.py`` for the fields).

One entry per (site, op, shapes, dtypes, target), aggregated while the script runs (a long
script keeps one entry per distinct call, not one per call). ``seconds`` and ``estimates``
are **totals over the entry's ``count`` calls**, so they compare directly with each other.

``estimates`` price the same calls on every target:

- with this machine's calibration (stored by ``dispatch calibrate``, or measured first by
  ``run --calibrate``): ``dispatch.routing.cost.estimate_call`` on every calibrated target, data on
  the host. ``machine.estimates`` is ``"calibration"``;
- without one (the cold start): the seed roofline of ``dispatch/cli/estimate.py``, each tier
  standing for the target that would run it here (SCALAR ``numpy``, SIMD ``torch-cpu``, GPU
  the GPU target found here, if any). ``machine.estimates`` is ``"seed-roofline"`` and
  ``machine.calibration`` is ``null``: a model, not this machine's measurements.

Calls with no array among their inputs (``zeros``, ``arange``: the trace does not see the
size they create) and ops the cost model cannot price (ufunc methods such as ``add.reduce``,
functions outside the NumPy catalog, which run on NumPy) have no estimates. Calls made outside the user's files
(from a library's own code, or at exit) have no site: they are counted under ``unattributed``.
"""

from __future__ import annotations

import os
from typing import Any

from dispatch.cli._pricing import calibration_label, price_call, roofline_by_target
from dispatch.routing import calibration
from dispatch.routing.calibration import Calibration
from dispatch.tracing import Trace

__all__ = ["build_profile", "display_path"]


def display_path(filename: str, start: str | None = None) -> str:
    """A site's file relative to ``start`` (the working directory) when it lies under it, else
    absolute."""
    try:
        rel = os.path.relpath(filename, start)
    except ValueError:  # another drive (Windows)
        return filename
    return filename if rel.startswith(os.pardir) else rel


def build_profile(
    trace: Trace,
    cal: Calibration | None,
    cal_path: str | None,
    available: list[str],
    script: str,
    argv: list[str],
    exit_code: int,
    wall_seconds: float,
    start_dir: str | None = None,
) -> dict[str, Any]:
    """The profile of a finished run, as a JSON-ready dict."""

    entries: dict[tuple, dict[str, Any]] = {}
    unattributed = {"calls": 0, "seconds": 0.0}
    for group in trace.grouped():
        if group.site is None:
            unattributed["calls"] += group.calls
            unattributed["seconds"] += group.seconds
            continue
        file, _, line = group.site.rpartition(":")
        site = f"{display_path(file, start_dir)}:{line}"
        shapes = [list(map(int, s)) for s in group.shapes]
        key = (site, group.op, tuple(map(tuple, shapes)), tuple(group.dtypes), group.target)
        entry = entries.setdefault(key, {
            "site": site, "op": group.op, "shapes": shapes, "dtypes": list(group.dtypes),
            "count": 0, "target": group.target, "seconds": 0.0, "estimates": {},
        })
        entry["count"] += group.calls
        entry["seconds"] += group.seconds

    priced: dict[tuple, dict[str, float]] = {}
    for (_, op, shapes, dtypes, _), entry in entries.items():
        per_call = priced.get((op, shapes, dtypes))
        if not shapes:  # no array among the inputs (creation: zeros, arange...): the size is unknown
            per_call = {}
        elif per_call is None:
            if cal is not None:
                per_call = price_call(op, entry["shapes"], entry["dtypes"], cal)
            else:
                per_call = roofline_by_target(op, entry["shapes"], available)
            priced[(op, shapes, dtypes)] = per_call
        entry["estimates"] = {target: seconds * entry["count"] for target, seconds in per_call.items()}

    info = calibration.machine()
    machine = {
        **info,
        "fingerprint": calibration.fingerprint(info),
        "targets": available,
        "calibrated": cal is not None,
        "calibration": calibration_label(cal, cal_path) if cal is not None else None,
        "estimates": "calibration" if cal is not None else "seed-roofline",
        "note": (
            "estimates: this machine's calibration, data on the host"
            if cal is not None
            else "this machine is not calibrated: estimates are the seed roofline (a model, not a "
            "measurement); run `python -m dispatch calibrate` or `dispatch run --calibrate`"
        ),
    }
    calls = sorted(entries.values(), key=lambda e: (_site_key(e["site"]), e["op"], -e["seconds"]))
    return {
        "version": 1,
        "units": "seconds and estimates are totals over the entry's count calls",
        "script": script,
        "argv": argv,
        "exit_code": exit_code,
        "wall_seconds": wall_seconds,
        "machine": machine,
        "calls": calls,
        "unattributed": unattributed,
    }


def _site_key(site: str) -> tuple[str, int]:
    file, _, line = site.rpartition(":")
    return file, int(line)
