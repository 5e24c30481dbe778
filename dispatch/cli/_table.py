"""The ``analyze`` report as a terminal table: rich where it is installed and the output is a
terminal, plain aligned text otherwise (pipes, logs, CI). Both show the same cells."""

from __future__ import annotations

from typing import Any

from dispatch.base.tiers import Backend
from dispatch.cli._pricing import ROOFLINE
from dispatch.cli._profile import ProfileCall
from dispatch.cli._report import Report, Row

__all__ = [
    "format_ratio",
    "format_seconds",
    "model_line",
    "profile_only_table",
    "render_plain",
    "render_rich",
    "site_table",
    "summary_lines",
]

_CALL_WIDTH = 44
# right-aligned columns (and sorted as numbers on the HTML page)
NUMERIC = frozenset({"n", "n at run", "calls", "measured", "speedup", "speedup there"})


def format_seconds(seconds: float) -> str:
    """``1.2e-05`` -> ``"12 µs"``; ``0.0042`` -> ``"4.2 ms"``; ``3.5`` -> ``"3.5 s"``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale or unit == "ns":
            value = seconds / scale
            return f"{value:.2g} {unit}" if value < 10 else f"{value:,.0f} {unit}"
    raise AssertionError("unreachable")


def short_call(source: str) -> str:
    """A call's source on one line, cut to the table's width."""
    text = " ".join(source.split())
    return text if len(text) <= _CALL_WIDTH else text[: _CALL_WIDTH - 1] + "…"


def _op(row: Row) -> str:
    site = row.site
    return f"{site.op}.{site.method}" if site.method and site.library == "scikit-learn" else str(site.op)


def format_ratio(ratio: float) -> str:
    """``4.123`` -> ``"×4.1"``; ``1234.5`` -> ``"×1,234"``."""
    return f"×{ratio:.1f}" if ratio < 10 else f"×{ratio:,.0f}"


def _estimate(row: Row, mark_roofline: bool = False) -> str:
    """The best tier's model estimate, and its gain over SCALAR (``*``: priced by the seed
    roofline in a report priced by a calibration)."""
    best = row.best
    if best is None or row.estimate is None:
        return "-"
    tier, seconds = best
    text = f"{tier.name} {format_seconds(seconds)}"
    if tier is not Backend.SCALAR:
        text = f"{text} {format_ratio(row.estimate[Backend.SCALAR] / seconds)}"
    return f"{text} *" if mark_roofline and row.source == ROOFLINE else text


def _calibrated(report: Report) -> bool:
    return report.model.get("name") == "calibration"


def site_table(report: Report) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the sites table."""
    headers = ["location", "call", "op", "complexity", "n", "tier", "model estimate (best)"]
    with_profile = report.profile is not None
    if with_profile:
        headers += ["n at run", "calls", "measured", "best target", "speedup"]
        if report.hardware is not None:
            headers += _HARDWARE_HEADERS
    mark = _calibrated(report)
    cells = []
    for row in report.rows:
        site = row.site
        line = [
            site.location,
            short_call(site.source),
            _op(row),
            site.complexity.name if site.complexity is not None else "-",
            f"{site.size:,}" if site.size is not None else "?",
            row.tier.name if row.tier is not None else "size unknown",
            _estimate(row, mark),
        ]
        if with_profile:
            line += _profile_cells(row.profile)
            if report.hardware is not None:
                line += _hardware_cells(row.profile)
        cells.append(line)
    return headers, cells


def _profile_cells(call: ProfileCall | None) -> list[str]:
    """n at run, calls, measured, best target, speedup."""
    if call is None:
        return ["", "", "", "", ""]
    speedup = format_ratio(call.speedup) if call.speedup is not None else "-"
    size = f"{call.size:,}" if call.size is not None else "-"
    return [size, f"{call.count:,}", format_seconds(call.seconds), call.recommended_target, speedup]


# on the machine of the --hardware calibration: its cheapest target, and the gain over NumPy there
_HARDWARE_HEADERS = ["best there", "speedup there"]


def _hardware_cells(call: ProfileCall | None) -> list[str]:
    if call is None:
        return ["", ""]
    speedup = call.hardware_speedup
    return [call.hardware_target or "-", format_ratio(speedup) if speedup is not None else "-"]


def profile_only_table(report: Report) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the profiled calls no static site took."""
    headers = ["site", "op", "n at run", "calls", "measured", "ran on", "best target", "speedup"]
    if report.hardware is not None:
        headers += _HARDWARE_HEADERS
    cells = []
    for call in report.profile_only:
        size, count, measured, best, speedup = _profile_cells(call)
        line = [call.site, call.op, size, count, measured, call.target, best, speedup]
        if report.hardware is not None:
            line += _hardware_cells(call)
        cells.append(line)
    return headers, cells


def summary_lines(report: Report) -> list[str]:
    tiers = report.tier_counts()
    unknown = tiers.pop("unknown")
    parts = [f"{count} {name}" for name, count in tiers.items()] + [f"{unknown} size unknown"]
    lines = [f"{_count(len(report.rows), 'call site')} in {_count(len(report.files), 'file')}: {', '.join(parts)}."]
    unclassified = report.unclassified
    if unclassified:
        names = sorted({site.name for site in unclassified})
        shown = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
        lines.append(f"{_count(len(unclassified), 'library call')} outside the catalogs (unclassified): {shown}")
    if report.profile is not None:
        matched = sum(row.profile is not None for row in report.rows)
        unmatched = _count(len(report.profile_only), "call")
        lines.append(f"profile {report.profile.path}: {_count(matched, 'site')} matched, {unmatched} without a site.")
    lines.append(model_line(report))
    if report.hardware is not None:
        hw = report.hardware
        gpus = ", ".join(g for g in hw.get("gpus") or [] if g) or "no GPU"
        kind = "quick" if hw.get("quick") else "full"
        lines.append(
            f"there: the calibration {hw.get('path')} ({hw.get('cpu')}; {gpus}; {kind}, "
            f"{hw.get('created') or 'undated'}): best target and speedup over NumPy on that machine, data on the host."
        )
    return lines


def model_line(report: Report) -> str:
    """What the tiers and estimates are: the seed's table among the tiers at hand; the seed
    roofline (cold start) or this machine's calibration."""
    tier = "Tier: the seed's MoE table"
    if report.tiers is not None and len(report.tiers) < len(Backend):
        tier += f" among the tiers here ({', '.join(t.name for t in report.tiers)})"
    if not _calibrated(report):
        return f"{tier}. Estimates are a model (seed roofline, data on the host), not measurements."
    cal = report.model.get("calibration", {})
    kind = "quick" if cal.get("quick") else "full"
    return (
        f"{tier}. Estimates: this machine's calibration ({kind}, {cal.get('created')}), "
        "data on the host; * the seed roofline (a model) where the calibration cannot price the op."
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _plain(headers: list[str], cells: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(row[i]) for row in cells)) if cells else len(h) for i, h in enumerate(headers)]
    numeric = NUMERIC
    out = []
    for row in [headers, *cells]:
        parts = [c.rjust(w) if h in numeric else c.ljust(w) for c, w, h in zip(row, widths, headers, strict=True)]
        out.append("  ".join(parts).rstrip())
    return out


def render_plain(report: Report) -> str:
    """The whole report as aligned text."""
    lines = _plain(*site_table(report)) if report.rows else ["no NumPy, scikit-learn or PyTorch call sites found"]
    if report.profile_only:
        lines += ["", "profiled calls without a static site:", *_plain(*profile_only_table(report))]
    return "\n".join([*lines, "", *summary_lines(report)]) + "\n"


def render_rich(report: Report, console: Any) -> None:
    """The whole report on a ``rich.console.Console``."""
    from rich.table import Table  # optional dependency: imported on use

    for title, (headers, cells) in (
        ("call sites", site_table(report)),
        ("profiled calls without a static site", profile_only_table(report)),
    ):
        if not cells:
            continue
        table = Table(title=title, title_justify="left")
        for header in headers:
            numeric = header in NUMERIC
            table.add_column(header, justify="right" if numeric else "left", overflow="fold")
        for row in cells:
            table.add_row(*row)
        console.print(table)
    for line in summary_lines(report):
        console.print(line, highlight=False, markup=False)
