"""Measure this machine so that calls are routed by what it measured, not by the seed's table.

Times every target that works here (or only those named with --only), through dispatch
itself: per-call overhead, memory bandwidth, GEMM rates, transfers to and from each GPU, and
representative ops of each complexity at a few sizes (about 15-25 s; --quick, float64 and the
integer sorts: a few seconds without a GPU, 10-20 s with one). The result is stored in the
cache (``dispatch info`` shows where) under a fingerprint of the hardware and library versions,
and routes every later run.
--only re-measures the targets it names and keeps the stored measurements of the others.

Prints what was measured and the MoE table derived from it next to the seed's. --out FILE
also writes the calibration to FILE: measured on a GPU machine, it prices a profile recorded
anywhere (`dispatch analyze --profile out.json --hardware FILE`). --show prints the stored
calibration (or FILE) without measuring.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dispatch import measure, targets
from dispatch.base import cachefiles
from dispatch.base.tiers import OpComplexity
from dispatch.cli import CommandError, writable
from dispatch.cli._pricing import stored_calibration_path, this_machine_calibration
from dispatch.cli._table import format_seconds
from dispatch.routing import calibration, router
from dispatch.routing.calibration import Calibration
from dispatch.routing.selector import BackendSelector

HELP = "measure this machine's targets and route by the measurements"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="fewer sizes, float64 and the integer sorts (a few seconds without a GPU, "
                             "10-20 s with one)")
    parser.add_argument("--only", nargs="+", metavar="TARGET", help="measure only these targets")
    parser.add_argument("--out", metavar="FILE", help="also write the calibration (JSON) to FILE")
    parser.add_argument(
        "--show", nargs="?", const="", metavar="FILE", help="print the stored calibration (or FILE); measure nothing"
    )
    parser.add_argument("--json", action="store_true", help="print the calibration as JSON instead of the tables")


def run(args: argparse.Namespace) -> int:
    if args.show is not None:
        if args.quick or args.only or args.out:
            raise CommandError("--show measures nothing: it takes no --quick, --only or --out", 2)
        cal, where = _stored(args.show)
    else:
        only = _check_targets(args.only)
        if args.out:
            writable(args.out, "--out")
        _check_cache()
        kept = _merge_base(only)
        cal = measure.calibrate(quick=args.quick, progress=sys.stderr.isatty(), save=False, only=only)
        if kept is not None:
            merged = {**kept.targets, **cal.targets}  # in the registry's order
            cal.targets = {name: merged[name] for name in [*targets.names(), *sorted(merged)] if name in merged}
            cal.quick = cal.quick or kept.quick
        try:
            where = cal.save()
        except OSError as exc:
            raise CommandError(f"cannot store the calibration in {calibration.cache_dir()}: {exc.strerror or exc}") \
                from None
        calibration._loaded[cal.fingerprint] = cal

        router.use_calibration(cal)
        if args.out:
            _write(args.out, cal)
        if kept is not None and set(kept.targets) - set(only or ()):
            print(f"kept the stored measurements of {', '.join(sorted(set(kept.targets) - set(only or ())))}",
                  file=sys.stderr)
        print(f"stored {where}", file=sys.stderr)
    if args.json:
        sys.stdout.write(cal.to_json() + "\n")
    else:
        sys.stdout.write(render(cal, where))
    return 0


def _check_cache() -> None:
    """The cache folder, made where missing: one that cannot be (a file, say) is refused before
    any measuring."""
    folder = calibration.cache_dir()
    try:
        cachefiles.private_dir(folder)
    except OSError as exc:
        raise CommandError(f"cannot use the cache folder {folder} (DISPATCH_CACHE_DIR): "
                           f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}", 2) from None


def _check_targets(names: list[str] | None) -> tuple[str, ...] | None:
    if not names:
        return None
    for name in names:
        if name in targets.names() and name not in router.PRICED:
            raise CommandError(f"target {name} is reached by size, never priced: there is nothing to calibrate", 2)
        if name not in targets.names():
            raise CommandError(f"unknown target {name!r}; known: {', '.join(router.PRICED)}", 2)
        if targets.probe(name) is None:
            raise CommandError(f"target {name} is not available here: {targets.unavailable()[name]}")
    return tuple(dict.fromkeys(names))


def _merge_base(only: tuple[str, ...] | None) -> Calibration | None:
    """The stored calibration whose other targets a partial (--only) run keeps."""
    if only is None:
        return None

    return this_machine_calibration()


def _stored(path: str) -> tuple[Calibration, Path]:
    if path:
        try:
            return calibration.load(path), Path(path)
        except FileNotFoundError:
            raise CommandError(f"no such calibration: {path}", 2) from None
        except (OSError, ValueError, KeyError) as exc:
            raise CommandError(f"cannot read calibration {path}: {exc}") from None
    where = stored_calibration_path()
    cal = calibration.load()
    if cal is None:
        raise CommandError(f"this machine is not calibrated (nothing at {where}): run `python -m dispatch calibrate`")
    return cal, where


def _write(path: str, cal: Calibration) -> None:
    try:
        cal.save(path)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(f"wrote {path}", file=sys.stderr)


# ---- the tables ---------------------------------------------------------------------------------


def _rate(value: float | None, unit: str) -> str:
    if not value:
        return "-"
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _seconds(value: float | None) -> str:
    return format_seconds(value) if value else "-"


def _gemm_peak(data: dict[str, Any], dtype: str) -> float | None:
    points = data.get("gemm", {}).get(dtype, [])
    return max((rate for _, rate in points), default=None)


def _aligned(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [headers, *rows]]


def measured_table(cal: Calibration) -> list[str]:
    """One line per target: overheads, bandwidth, GEMM peaks and, for GPUs, transfer rates."""
    headers = ["target", "device", "threads", "call overhead", "launch+sync", "memory", "GEMM f64", "GEMM f32",
               "to device", "to host"]
    rows = []
    for name, data in cal.targets.items():
        transfer = data.get("transfer") or {}
        to_dev = transfer.get("to_device_staged") or transfer.get("to_device_pageable")
        to_host = transfer.get("to_host_staged") or transfer.get("to_host_pageable")
        rows.append([
            name,
            str(data.get("device", "?")),
            str(data.get("threads", "?")),
            _seconds(data.get("call_overhead_s")),
            _seconds(data.get("sync_overhead_s")),
            _rate(data.get("memory_bandwidth"), "B/s"),
            _rate(_gemm_peak(data, "float64"), "FLOP/s"),
            _rate(_gemm_peak(data, "float32"), "FLOP/s"),
            _rate(to_dev, "B/s") if transfer else "-",
            _rate(to_host, "B/s") if transfer else "-",
        ])
    return _aligned(headers, rows)


def moe_table(cal: Calibration) -> list[str]:
    """The MoE thresholds derived from ``cal`` next to the seed's (elements; a tier is taken
    above its threshold; "never": it does not win at any size here)."""

    seed = BackendSelector().thresholds
    derived = BackendSelector.from_calibration(cal).thresholds

    def cell(value: int | None) -> str:
        return "never" if value is None else f"> {value:,}"

    rows = [
        [c.name, cell(seed.simd[c]), cell(seed.gpu[c]), cell(derived.simd[c]), cell(derived.gpu[c])]
        for c in OpComplexity
    ]
    return _aligned(["complexity", "seed SIMD", "seed GPU", "measured SIMD", "measured GPU"], rows)


def _stopped(cal: Calibration) -> list[str]:
    """The ops a target failed at some size (out of memory...), where its measured points end."""
    lines = [f"  {name} {what} {why}" for name, t in cal.targets.items() for what, why in t.get("stopped", {}).items()]
    return ["", "stopped early (a target failed an op at a size: its points end below it):", *lines] if lines else []


def _measured_again(cal: Calibration) -> list[str]:
    """The products and factorisations measured again: far slower per unit of work than the size
    below them, disturbed (each time taken; the least is kept)."""
    lines = [f"  {name} {what}: " + ", ".join(f"{seconds * 1e3:.3g}" for seconds in times) + " ms"
             for name, t in cal.targets.items() for what, times in t.get("measured_again", {}).items()]
    return ["", "measured again (far slower per unit of work than the size below; the least kept):", *lines] \
        if lines else []


def render(cal: Calibration, where: Path | str) -> str:
    kind = "quick" if cal.quick else "full"
    took = f" in {cal.seconds:g} s" if cal.seconds else ""
    lines = [
        f"calibration {cal.fingerprint} ({kind}, measured {cal.created or 'at an unknown time'}{took})",
        f"file: {where}",
        f"machine: {cal.machine.get('cpu', '?')}, {cal.machine.get('cpu_count', '?')} cores"
        + "".join(f"; {g.get('name', '?')} ({g.get('target')})" for g in cal.machine.get("gpus", [])),
        "",
        *measured_table(cal),
        *_stopped(cal),
        *_measured_again(cal),
        "",
        "MoE table (elements; SIMD: a multi-threaded CPU engine beats NumPy; GPU: a GPU beats every",
        "CPU engine, paying the transfer of host data):",
        *moe_table(cal),
    ]
    return "\n".join(lines) + "\n"
