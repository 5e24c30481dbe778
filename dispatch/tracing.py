"""Tracing: where each call ran, why, how long it took and what it moved.

``with dispatch.trace() as t:`` records every call made inside the block; ``DISPATCH_TRACE=1``
records the whole process and prints the summary at exit. Fallbacks (a target refused or
failed, NumPy ran instead) are always counted, traced or not, and logged once per
(op, reason) on the ``dispatch`` logger: never a flood of warnings.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as _np

from dispatch.base.settings import ENV
from dispatch.base.state import STATE

__all__ = ["CallRecord", "Trace", "fallbacks", "trace", "use_opentelemetry"]

_lock = threading.Lock()
_fallbacks: Counter[tuple[str, str]] = Counter()
_active: list[Trace] = []


@dataclass
class CallRecord:
    """One routed call."""

    op: str
    shapes: list[list[int]]
    dtypes: list[str]
    target: str
    reason: str
    seconds: float
    predicted_seconds: float | None = None
    bytes_moved: int = 0
    site: str | None = None
    bytes_kept: int = 0  # inputs read from a copy kept on the call's side (``dispatch.arrays.mirrors``), not copied


@dataclass
class CallGroup:
    """Calls with the same (site, op, shapes, dtypes, target, reason), summed."""

    op: str
    shapes: list[list[int]]
    dtypes: list[str]
    target: str
    reason: str
    site: str | None = None
    calls: int = 0
    seconds: float = 0.0
    bytes_moved: int = 0
    bytes_kept: int = 0


@dataclass(repr=False)
class Trace:
    """The calls recorded while the trace was open, and the fallbacks among them.

    ``Trace(aggregate=True)`` keeps one ``CallGroup`` per distinct (site, op, shapes, dtypes,
    target, reason) in ``groups`` instead of a record per call in ``records``: the memory a
    long program needs stays bounded by the distinct calls it makes.
    """

    records: list[CallRecord] = field(default_factory=list)
    fallbacks: Counter[tuple[str, str]] = field(default_factory=Counter)
    aggregate: bool = False
    groups: dict[tuple, CallGroup] = field(default_factory=dict)
    _group_lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)

    def __enter__(self) -> Trace:
        with _lock:
            _active.append(self)
            STATE.tracing += 1
            STATE.refresh()
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _active.remove(self)
            STATE.tracing -= 1
            STATE.refresh()

    def add(self, rec: CallRecord) -> None:
        """Keep one call: as a record, or summed into its group when aggregating."""
        if not self.aggregate:
            self.records.append(rec)
            return
        key = (rec.site, rec.op, tuple(map(tuple, rec.shapes)), tuple(rec.dtypes), rec.target, rec.reason)
        with self._group_lock:
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = CallGroup(rec.op, rec.shapes, rec.dtypes, rec.target, rec.reason, rec.site)
            group.calls += 1
            group.seconds += rec.seconds
            group.bytes_moved += rec.bytes_moved
            group.bytes_kept += rec.bytes_kept

    # ---- reading a trace ------------------------------------------------------------------------

    def grouped(self) -> Iterator[CallGroup]:
        """Every call kept: the groups when aggregating, else one group per record."""
        if self.aggregate:
            with self._group_lock:
                yield from list(self.groups.values())
            return
        for r in self.records:
            yield CallGroup(r.op, r.shapes, r.dtypes, r.target, r.reason, r.site, 1, r.seconds, r.bytes_moved,
                            r.bytes_kept)

    def by_target(self) -> dict[str, float]:
        """Seconds spent per target."""
        totals: dict[str, float] = {}
        for g in self.grouped():
            totals[g.target] = totals.get(g.target, 0.0) + g.seconds
        return totals

    def rows(self) -> list[dict[str, Any]]:
        """Per (op, target, reason): calls, seconds, bytes moved and bytes read from kept copies, most time first."""
        groups: dict[tuple[str, str, str], dict[str, Any]] = {}
        for g in self.grouped():
            row = groups.setdefault(
                (g.op, g.target, g.reason),
                {"op": g.op, "target": g.target, "reason": g.reason, "calls": 0, "seconds": 0.0, "bytes_moved": 0,
                 "bytes_kept": 0},
            )
            row["calls"] += g.calls
            row["seconds"] += g.seconds
            row["bytes_moved"] += g.bytes_moved
            row["bytes_kept"] += g.bytes_kept
        return sorted(groups.values(), key=lambda row: -row["seconds"])

    def to_json(self) -> str:
        data: dict[str, Any] = {"calls": [asdict(r) for r in self.records]}
        if self.aggregate:
            data["groups"] = [asdict(g) for g in self.grouped()]
        data["fallbacks"] = [{"op": op, "reason": why, "count": n} for (op, why), n in self.fallbacks.items()]
        return json.dumps(data, indent=1)

    def _table(self) -> tuple[str, tuple[str, ...], list[tuple[str, ...]]]:
        """The summary's title, headers and rows, formatted (a column ``kept``, the bytes read
        from kept copies instead of copied, where any call read one)."""
        rows = self.rows()
        kept = any(r["bytes_kept"] for r in rows)
        headers = ("op", "target", "reason", "calls", "time", "moved") + (("kept",) if kept else ())
        table = [
            (r["op"], r["target"], r["reason"], str(r["calls"]), _fmt_seconds(r["seconds"]),
             _fmt_bytes(r["bytes_moved"])) + ((_fmt_bytes(r["bytes_kept"]),) if kept else ())
            for r in rows
        ]
        calls = sum(r["calls"] for r in rows)
        total = sum(r["seconds"] for r in rows)
        return f"dispatch trace: {calls} call{'' if calls == 1 else 's'}, {_fmt_seconds(total)}", headers, table

    def summary(self, file: Any = None) -> None:
        """Print a table of where time went and what moved, and the fallbacks to NumPy.

        On a terminal the table is drawn with rich when it is installed; elsewhere (a pipe, a
        file, a notebook) it is plain text whose columns are as wide as their longest entry.
        It returns nothing, so a REPL shows it once; in a notebook, a trace displays itself as
        an HTML table.
        """
        file = file or sys.stdout
        _render(*self._table(), file)
        if self.fallbacks:
            lines = [f"  {op}: {why} (x{n})" for (op, why), n in self.fallbacks.items()]
            print("fallbacks to NumPy:\n" + "\n".join(lines), file=file)

    def __repr__(self) -> str:
        title = self._table()[0]
        return f"<Trace: {title.removeprefix('dispatch trace: ')}{'' if not self.fallbacks else ', with fallbacks'}>"

    def _repr_html_(self) -> str:
        """The summary as an HTML table, which notebooks show for a trace."""
        from html import escape

        title, headers, table = self._table()

        def cells(tag: str, values: tuple[str, ...]) -> str:
            return "".join(
                f'<{tag} style="text-align:{"right" if h in _NUMBERS else "left"}">{escape(v)}</{tag}>'
                for h, v in zip(headers, values, strict=True)
            )

        body = "".join(f"<tr>{cells('td', r)}</tr>" for r in table)
        html = (f"<table><caption>{escape(title)}</caption><thead><tr>{cells('th', headers)}</tr></thead>"
                f"<tbody>{body}</tbody></table>")
        if self.fallbacks:
            items = "".join(f"<li>{escape(op)}: {escape(why)} (x{n})</li>" for (op, why), n in self.fallbacks.items())
            html += f"<p>fallbacks to NumPy:</p><ul>{items}</ul>"
        return html


def trace(aggregate: bool = False) -> Trace:
    """Record the calls made inside a ``with`` block: ``with dispatch.trace() as t: ...``
    (``aggregate=True``: sum calls into groups instead of keeping a record per call)."""
    return Trace(aggregate=aggregate)


def fallbacks() -> dict[tuple[str, str], int]:
    """Every fallback since the process started: (op, reason) -> count."""
    with _lock:
        return dict(_fallbacks)


# ---- recording (called by the call path) ---------------------------------------------------------


def fallback(op: Any, why: str) -> None:
    """``op`` (an op, or its name) ran on NumPy for ``why``: counted, and logged once."""
    key = (op if isinstance(op, str) else op.name, why)
    with _lock:
        first = key not in _fallbacks
        _fallbacks[key] += 1
        for t in _active:
            t.fallbacks[key] += 1
    if first and "logging" in sys.modules:  # else nothing is configured to show an INFO record: none is made
        sys.modules["logging"].getLogger("dispatch").info("dispatch: %s ran on NumPy: %s", key[0], why)


def record(rec: CallRecord) -> None:
    for t in list(_active):
        t.add(rec)
    if _otel_tracer is not None:
        _export_span(rec)


# ---- OpenTelemetry: one span per routed call ----------------------------------------------------------

_otel_tracer: Any = None


def use_opentelemetry(tracer: Any = None) -> None:
    """Export a span per routed call (op, target, reason, predicted and measured time, bytes
    moved) through OpenTelemetry; needs ``opentelemetry-api``. ``tracer`` defaults to the
    global provider's tracer for ``dispatch``. ``use_opentelemetry(False)`` stops."""
    global _otel_tracer
    with _lock:
        was_on = _otel_tracer is not None
        if tracer is False:
            _otel_tracer = None
        else:
            if tracer is None:
                from opentelemetry import trace as otel_trace

                tracer = otel_trace.get_tracer("dispatch")
            _otel_tracer = tracer
        STATE.tracing += (_otel_tracer is not None) - was_on
        STATE.refresh()


def _export_span(rec: CallRecord) -> None:
    end = time.time_ns()
    span = _otel_tracer.start_span(f"dispatch.{rec.op}", start_time=end - int(rec.seconds * 1e9))
    span.set_attribute("dispatch.op", rec.op)
    span.set_attribute("dispatch.target", rec.target)
    span.set_attribute("dispatch.reason", rec.reason)
    span.set_attribute("dispatch.shapes", json.dumps(rec.shapes))
    span.set_attribute("dispatch.dtypes", ",".join(rec.dtypes))
    span.set_attribute("dispatch.seconds", rec.seconds)
    span.set_attribute("dispatch.bytes_moved", rec.bytes_moved)
    if rec.predicted_seconds is not None:
        span.set_attribute("dispatch.predicted_seconds", rec.predicted_seconds)
    span.end(end_time=end)


# Record the user's call site (file:line) of each call; profiling turns this on.
SITES = False
# Which files are the user's: a predicate on a frame's file name (``dispatch run`` sets it to
# the script's own files). ``None``: any file outside dispatch and NumPy.
SITE_FILTER: Callable[[str], bool] | None = None
# dispatch's and NumPy's own folders (by location, not by a name a user's path may contain too)
_SKIPPED_DIRS = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.dirname(os.path.abspath(_np.__file__)) + os.sep,
)


def call_site() -> str | None:
    """``file:line`` of the first frame outside dispatch and NumPy (and, with ``SITE_FILTER``,
    in a file it accepts); ``None`` when no frame qualifies."""
    frame: Any = sys._getframe(2)
    accept = SITE_FILTER
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(_SKIPPED_DIRS) and (accept is None or accept(name)):
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return None


# ---- formatting ------------------------------------------------------------------------------------


def _fmt_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


_NUMBERS = frozenset({"calls", "time", "moved", "kept"})  # right-aligned columns


def _render(title: str, headers: tuple[str, ...], rows: list[tuple[str, ...]], file: Any) -> None:
    isatty = getattr(file, "isatty", None)
    if isatty is not None and isatty():
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            pass
        else:
            table = Table(title=title)
            for h in headers:
                table.add_column(h, justify="right" if h in _NUMBERS else "left")
            for r in rows:
                table.add_row(*r)
            Console(file=file).print(table)
            return
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if h in _NUMBERS else c.ljust(w)
                         for h, c, w in zip(headers, cells, widths, strict=True)).rstrip()

    print("\n".join([title, line(headers), *map(line, rows)]), file=file)


if ENV.trace:  # DISPATCH_TRACE
    _process_trace = Trace().__enter__()
    atexit.register(lambda: _process_trace.summary(file=sys.stderr))
