"""The ``analyze`` report as one standalone HTML page: inline CSS, a few lines of inline JS to
sort the table by a column, and an inline SVG chart of the model's estimated time per tier.
Nothing is fetched from the network."""

from __future__ import annotations

from html import escape

from dispatch.cli._profile import ProfileCall
from dispatch.cli._report import Report
from dispatch.cli._table import NUMERIC, format_seconds, profile_only_table, site_table, summary_lines

__all__ = ["render_html"]

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
th { background: #f3f3f3; cursor: pointer; user-select: none; position: sticky; top: 0; }
th.sorted-asc::after { content: " \\25B2"; } th.sorted-desc::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td code { font-size: 12px; }
.tier-GPU { color: #0a6e31; font-weight: 600; } .tier-SIMD { color: #1f4fa8; }
.note { color: #666; } svg text { font: 12px system-ui, sans-serif; }
"""

# Click a header to sort by it; numeric cells sort by their data-sort value, and cells without
# one (an unknown size or time) come last either way.
_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var asc = !th.classList.contains("sorted-asc");
      table.querySelectorAll("th").forEach(function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
      th.classList.add(asc ? "sorted-asc" : "sorted-desc");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[col], v = cell.getAttribute("data-sort");
        return v === null ? cell.textContent : (v === "" ? null : parseFloat(v));
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === null || y === null) { return (x === null) - (y === null); }
        var c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

_NUMERIC = NUMERIC | {"model estimate (best)"}


def render_html(report: Report) -> str:
    """The report as a standalone HTML page."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>dispatch analyze</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>dispatch analyze: " + escape(", ".join(report.paths)) + "</h1>",
        *(f'<p class="note">{escape(line)}</p>' for line in summary_lines(report)),
        "<h2>Estimated time by backend (model estimate)</h2>",
        _chart(report.estimated_totals()),
        '<p class="note">Every call site whose size is visible, run once; host-only work counts as SCALAR '
        f"on every bar. {escape(_model_note(report))}</p>",
        "<h2>Call sites</h2>",
        _sites_table(report),
    ]
    if report.profile_only:
        headers, cells = profile_only_table(report)
        values = [_profile_values(call) for call in report.profile_only]
        parts += ["<h2>Profiled calls without a static site</h2>", _table(headers, cells, values)]
    if report.unclassified:
        parts += ["<h2>Library calls outside the catalogs (unclassified)</h2>", "<ul>"]
        parts += [f"<li>{escape(s.location)} <code>{escape(s.name)}</code></li>" for s in report.unclassified]
        parts.append("</ul>")
    if report.errors:
        parts += ["<h2>Files not scanned</h2>", "<ul>", *(f"<li>{escape(str(e))}</li>" for e in report.errors), "</ul>"]
    parts += [f"<script>{_SCRIPT}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"


def _model_note(report: Report) -> str:
    if report.model.get("name") == "calibration":
        return "This machine's calibration (the seed roofline where it cannot price an op), not a measurement."
    return "A roofline with the seed's defaults, not a measurement."


def _sites_table(report: Report) -> str:
    headers, cells = site_table(report)
    sort_values = []
    for row in report.rows:
        best = row.best
        values = {"n": row.site.size, "model estimate (best)": best[1] if best else None}
        if row.profile is not None:
            values |= _profile_values(row.profile)
        sort_values.append(values)
    return _table(headers, cells, sort_values)


def _profile_values(call: ProfileCall) -> dict:
    """What the numeric profile columns sort by."""
    return {"n at run": call.size, "calls": call.count, "measured": call.seconds, "speedup": call.speedup,
            "speedup there": call.hardware_speedup}


def _table(headers: list[str], cells: list[list[str]], sort_values: list[dict | None]) -> str:
    out = ['<table class="sortable"><thead><tr>']
    out += [f"<th>{escape(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for row, values in zip(cells, sort_values, strict=True):
        out.append("<tr>")
        for header, cell in zip(headers, row, strict=True):
            if header in _NUMERIC:
                value = (values or {}).get(header)
                sort = "" if value is None else repr(value)  # repr: a float's every digit
                out.append(f'<td class="num" data-sort="{sort}">{escape(cell)}</td>')
            elif header == "call":
                out.append(f"<td><code>{escape(cell)}</code></td>")
            elif header == "tier":
                out.append(f'<td class="tier-{escape(cell)}">{escape(cell)}</td>')
            else:
                out.append(f"<td>{escape(cell)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _chart(totals: dict[str, float]) -> str:
    """Horizontal bars, one per tier and one for each call on its best tier."""
    labels = {"SCALAR": "all SCALAR", "SIMD": "all SIMD", "GPU": "all GPU", "best": "each on its best tier"}
    colours = {"SCALAR": "#999", "SIMD": "#1f4fa8", "GPU": "#0a6e31", "best": "#c07000"}
    top = max(totals.values(), default=0.0) or 1.0
    bar_x, bar_width, row_height = 160, 380, 28
    height = row_height * len(totals) + 10
    out = [f'<svg role="img" aria-label="estimated seconds by tier" width="640" height="{height}">']
    for i, (key, seconds) in enumerate(totals.items()):
        y = 5 + i * row_height
        width = max(1.0, bar_width * seconds / top) if seconds else 0.0
        out.append(f'<text x="0" y="{y + 16}">{escape(labels[key])}</text>')
        out.append(f'<rect x="{bar_x}" y="{y + 3}" width="{width:.1f}" height="18" fill="{colours[key]}"></rect>')
        out.append(f'<text x="{bar_x + width + 6:.1f}" y="{y + 16}">{escape(format_seconds(seconds))}</text>')
    out.append("</svg>")
    return "".join(out)
