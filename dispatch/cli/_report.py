"""The ``analyze`` report: scanned sites classified by the converters, their tier, a model
estimate, and what a run-time profile adds; and its JSON form.

JSON schema, version 1 (``"version"`` changes when a field changes meaning or goes away;
new fields may be added within a version)::

    {
      "version": 1,
      "paths": ["examples"],                        # what was scanned, as given
      "estimate_model": {"name": "seed-roofline", "kind": "model estimate", ...parameters},
                        # or, where this machine is calibrated: {"name": "calibration", "kind":
                        # "model estimate", "calibration": {...}, "fallback": "seed-roofline"}
      "hardware": null,                             # or the calibration --hardware priced profiles on:
                        # {"path", "fingerprint", "created", "quick", "cpu", "gpus", "targets", "baseline": "numpy"}
      "summary": {"files": 3, "sites": 70, "unclassified": 9, "errors": 0,
                  "tiers": {"SCALAR": 40, "SIMD": 2, "GPU": 8, "unknown": 20},
                  # model estimate: every sized site run once, all on one tier / each on its best
                  "model_estimate_seconds_total": {"SCALAR": 0.02, "SIMD": 0.01, "GPU": 0.004, "best": 0.003}},
      "sites": [{
        "path": "examples/numpy_workload.py", "line": 87, "column": 12, "cell": null,
        "source": "np.zeros((300, 300))", "library": "numpy", "name": "numpy.zeros",
        "op": "zeros", "method": null, "complexity": "LOW",
        "size": 90000, "shape": [300, 300],      # elements; null: not visible statically
        "tier": "SCALAR",                        # recommend_backend(op, size); null: size unknown
        "model_estimate_seconds": {"SCALAR": 7.2e-05, "SIMD": 7.2e-05, "GPU": 8.2e-05},  # null: size unknown
        "model_estimate_source": "seed-roofline",  # or "calibration"; null: size unknown
        "profile": null                          # or the merged profile call, as in profile_only
      }],
      "unclassified": [{"path", "line", "column", "cell", "source", "library", "name", "method"}],
      "errors": [{"path", "line", "column", "cell", "message"}],
      "profile": null,                           # or {"path", "machine", "calls", "matched", "unmatched"}
      "profile_only": [{"site": "app.py:40", "op": "linalg.svd", "count": 3, "shapes": [[1000, 1000]],
                        "dtypes": ["float64"], "target": "numpy", "seconds": 0.12,
                        "estimates": {"numpy": 0.12, "cupy": 0.01},
                        "recommended_target": "cupy", "speedup": 12.0,
                        # with --hardware: that machine's estimates (totals over count), its
                        # cheapest target and the speedup over NumPy there; else null
                        "hardware": {"estimates": {"numpy": 0.3, "cupy": 0.004},
                                     "recommended_target": "cupy", "speedup": 75.0}}]
    }

Tiers in ``model_estimate_seconds`` (and the totals) are those the model can price: the
roofline prices all three; a calibration prices the tiers this machine has (SCALAR is
``numpy``, SIMD the other CPU engines, GPU the device engines).

Tiers are ``Backend`` names; complexities ``OpComplexity`` names; cells 0-based indices into a
notebook's ``cells``; lines and columns 1-based.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from converters import Converter, NumPyConverter, PyTorchConverter, SklearnConverter
from converters.scanner import CallSite, FileScan, ScanError
from dispatch.base.tiers import Backend, OpComplexity
from dispatch.cli._profile import Profile, ProfileCall, SiteKey, match_calls
from dispatch.cli.estimate import static_work

__all__ = ["REPORT_VERSION", "Report", "Row", "build_report"]

REPORT_VERSION = 1
_ORDER = list(Backend)  # SCALAR, SIMD, GPU

Estimator = Callable[[str, OpComplexity, int, Sequence[int] | None], dict[Backend, float]]


@dataclass
class Row:
    """A classified site with its recommendation."""

    site: CallSite
    tier: Backend | None
    estimate: dict[Backend, float] | None
    profile: ProfileCall | None = None
    source: str | None = None  # the model that priced ``estimate``

    @property
    def best(self) -> tuple[Backend, float] | None:
        """The tier with the lowest model estimate (the earlier tier wins a tie)."""
        if not self.estimate:
            return None
        return min(self.estimate.items(), key=lambda item: item[1])


@dataclass
class Report:
    paths: list[str]
    files: list[FileScan]
    rows: list[Row]
    model: dict
    profile: Profile | None = None
    profile_only: list[ProfileCall] = field(default_factory=list)
    hardware: dict | None = None  # the calibration profiled calls were priced on (--hardware)
    tiers: list[Backend] | None = None  # the tiers recommended and priced; None: all

    @property
    def unclassified(self) -> list[CallSite]:
        return [site for scan in self.files for site in scan.unclassified]

    @property
    def errors(self) -> list[ScanError]:
        return [error for scan in self.files for error in scan.errors]

    def tier_counts(self) -> dict[str, int]:
        counts = {tier.name: 0 for tier in Backend} | {"unknown": 0}
        for row in self.rows:
            counts[row.tier.name if row.tier is not None else "unknown"] += 1
        return counts

    def estimated_totals(self) -> dict[str, float]:
        """Model seconds to run every sized site once: all on one tier (host-only work stays on
        SCALAR), and on each site's best tier. Tiers no site's model priced are left out."""
        priced = {tier for row in self.rows if row.estimate for tier in row.estimate} or set(Backend)
        tiers = [tier for tier in Backend if tier in priced]
        totals = {tier.name: 0.0 for tier in tiers} | {"best": 0.0}
        for row in self.rows:
            if row.estimate is None:
                continue
            scalar = row.estimate[Backend.SCALAR]
            for tier in tiers:
                totals[tier.name] += row.estimate.get(tier, scalar)
            totals["best"] += min(row.estimate.values())
        return totals

    def to_json(self) -> dict:
        """The report as the version-1 JSON schema (see the module docstring)."""
        profile = None
        if self.profile is not None:
            profile = {
                "path": self.profile.path,
                "machine": self.profile.machine,
                "calls": len(self.profile.calls),
                "matched": sum(row.profile is not None for row in self.rows),
                "unmatched": len(self.profile_only),
            }
        return {
            "version": REPORT_VERSION,
            "paths": list(self.paths),
            "estimate_model": self.model,
            "hardware": self.hardware,
            "summary": {
                "files": len(self.files),
                "sites": len(self.rows),
                "unclassified": len(self.unclassified),
                "errors": len(self.errors),
                "tiers": self.tier_counts(),
                "model_estimate_seconds_total": self.estimated_totals(),
            },
            "sites": [_row_json(row) for row in self.rows],
            "unclassified": [_site_json(site) for site in self.unclassified],
            "errors": [
                {"path": e.path, "line": e.line, "column": e.column, "cell": e.cell, "message": e.message}
                for e in self.errors
            ],
            "profile": profile,
            "profile_only": [call.to_json() for call in self.profile_only],
        }


@functools.cache
def _converter(library: str) -> Converter:
    """The converter of a scanned site's ``library`` (the scanner uses the converters' names)."""
    return next(c() for c in (NumPyConverter, SklearnConverter, PyTorchConverter) if c.library == library)


def build_report(
    paths: Sequence[str],
    files: Sequence[FileScan],
    estimate: Estimator,
    model: dict,
    profile: Profile | None = None,
    hardware: dict | None = None,
    tiers: Collection[Backend] | None = None,
) -> Report:
    """Classify every site with its library's converter; add the tier the seed's table
    recommends and the model estimate where the size is known; merge ``profile`` if given
    (``hardware``: the calibration its calls were priced on, as the report names it).
    ``tiers``: the tiers a machine the report speaks of has (``None``: all); only they are
    priced, and a recommended tier that they, or the model's estimate, do not run gives way
    to the highest one below it that runs the op.

    ``estimate`` may say which model priced an op with a ``source_of(op)`` method (the
    calibrated estimator does); otherwise every estimate is ``model["name"]``'s."""
    source_of = getattr(estimate, "source_of", None)
    rows = []
    for scan in files:
        for site in scan.sites:
            if site.size is None:
                rows.append(Row(site, None, None))
                continue
            converter = _converter(site.library)
            tier = converter.recommend_backend(site.op, site.size)
            seconds = estimate(site.op, converter.complexity(site.op), site.size, site.shape)
            if tiers is not None:
                seconds = {t: s for t, s in seconds.items() if t in tiers}
            # no tier is named that nothing here (or on --hardware's machine) runs, nor one the
            # op cannot run on (host-only work: random streams, Python objects)
            host_only = static_work(site.op, converter.complexity(site.op), site.size, site.shape).host
            runs = {Backend.SCALAR} if host_only else set(tiers if tiers is not None else _ORDER)
            tier = max((t for t in _ORDER if t in runs and _ORDER.index(t) <= _ORDER.index(tier)),
                       key=_ORDER.index, default=Backend.SCALAR)
            source = source_of(site.op) if source_of is not None else model.get("name")
            rows.append(Row(site, tier, seconds, source=source))
    report = Report(list(paths), list(files), rows, model, hardware=hardware,
                    tiers=None if tiers is None else [t for t in _ORDER if t in tiers])
    if profile is not None:
        keys = [SiteKey(row.site.path, row.site.line, row.site.op) for row in rows]
        matched, unmatched = match_calls(keys, profile)
        for index, call in matched.items():
            rows[index].profile = call
        report.profile, report.profile_only = profile, unmatched
    return report


def _row_json(row: Row) -> dict:
    site = row.site
    return _site_json(site) | {
        "op": site.op,
        "complexity": site.complexity.name if site.complexity is not None else None,
        "size": site.size,
        "shape": list(site.shape) if site.shape is not None else None,
        "tier": row.tier.name if row.tier is not None else None,
        "model_estimate_seconds": {t.name: s for t, s in row.estimate.items()} if row.estimate is not None else None,
        "model_estimate_source": row.source if row.estimate is not None else None,
        "profile": row.profile.to_json() if row.profile is not None else None,
    }


def _site_json(site: CallSite) -> dict:
    """The fields every site record has, classified or not."""
    return {
        "path": site.path,
        "line": site.line,
        "column": site.column,
        "cell": site.cell,
        "source": site.source,
        "library": site.library,
        "name": site.name,
        "method": site.method,
    }
