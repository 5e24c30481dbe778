"""Find the NumPy, scikit-learn and PyTorch calls in Python files and notebooks, and say
which backend tier each would take.

Each call site is classified by the catalogs (op and complexity). Where its data size is
visible in the source, the seed's MoE table recommends a tier (SCALAR, SIMD or GPU; a tier no
target here runs, such as GPU on a machine without one, gives way to the next lower tier here,
unless --hardware names a machine that has it) and a model estimates the time on each tier:
this machine's calibration where it has one (`dispatch calibrate`), else a roofline with the
seed's defaults (the cold start; the output says which); elsewhere the size is unknown. A
profile recorded at run time (`dispatch run --profile`) adds real shapes, call counts, measured
time and a per-target recommendation. --hardware CAL.json (a calibration saved on another
machine: `dispatch calibrate --out gpu.json` there) prices every profiled call on that machine
too: its best target and the speedup over NumPy there.

Output: a table on the terminal; --json prints the version-1 JSON report on stdout instead;
--output FILE (-o) writes the JSON report to FILE (`-`: stdout); --html FILE writes a standalone
page with a sortable table and a chart; neither overwrites an existing .py or .ipynb file.
Files that do not parse are reported, the rest are still analysed, and the exit status is then 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from converters.scanner import scan_path
from dispatch.cli import CommandError, _pricing, writable
from dispatch.cli._html import render_html
from dispatch.cli._pricing import (
    CalibratedEstimator,
    calibration_label,
    price_call,
    stored_calibration_path,
    this_machine_calibration,
)
from dispatch.cli._profile import ProfileError, load_profile, priced_on
from dispatch.cli._report import build_report
from dispatch.cli._table import render_plain, render_rich
from dispatch.cli.estimate import MODEL, estimate_seconds
from dispatch.routing import calibration

HELP = "find NumPy / scikit-learn / PyTorch call sites and the backend each would take"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a .py file, a .ipynb notebook or a folder")
    parser.add_argument("--json", action="store_true", help="print the JSON report on stdout instead of the table")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the JSON report to FILE (`-`: stdout)")
    parser.add_argument("--html", metavar="FILE", help="write a standalone HTML report to FILE")
    parser.add_argument(
        "--profile", metavar="FILE", help="merge a profile recorded at run time (JSON, version 1) into the sites"
    )
    parser.add_argument(
        "--hardware",
        metavar="CAL.json",
        help="price the profiled calls on the machine this calibration was measured on (needs --profile)",
    )


def run(args: argparse.Namespace) -> int:
    for path in args.paths:
        if not os.path.exists(path):
            raise CommandError(f"no such file or directory: {path}", 2)
    if args.json and args.output not in (None, "-"):
        raise CommandError(f"--json prints the report on stdout; --output {args.output} writes it: choose one", 2)
    output = "-" if args.json else args.output
    for path, option in ((output, "--output"), (args.html, "--html")):
        if path is not None:
            writable(path, option)
    if args.hardware is not None and args.profile is None:
        raise CommandError("--hardware prices the calls of a profile: give --profile FILE too", 2)
    profile = hardware = None
    tiers = _pricing.tiers_here()  # no tier is named that no target here (or on --hardware's machine) runs
    if args.profile is not None:
        if not os.path.exists(args.profile):
            raise CommandError(f"no such profile: {args.profile}", 2)
        try:
            profile = load_profile(args.profile)
        except ProfileError as exc:
            raise CommandError(str(exc)) from None
    if args.hardware is not None:

        cal = _read_calibration(args.hardware)
        hardware = calibration_label(cal, args.hardware) | {"baseline": "numpy"}
        tiers |= _pricing.tiers_of(cal)
        profile = priced_on(profile, lambda call: price_call(call.op, [list(s) for s in call.shapes],
                                                             list(call.dtypes), cal) if call.shapes else {})
    estimate, model = _estimator()
    files = [scan for path in args.paths for scan in scan_path(path)]
    report = build_report(args.paths, files, estimate, model, profile, hardware, tiers)

    if output == "-":
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(report)
    if output not in (None, "-"):
        _write(output, json.dumps(report.to_json(), indent=2) + "\n")
    if args.html is not None:

        _write(args.html, render_html(report))
    for error in report.errors:
        print(f"dispatch analyze: error: {error}", file=sys.stderr)
    return 1 if report.errors else 0


def _estimator():
    """This machine's calibration as the model where it has one (with NumPy measured), else
    the seed roofline: the estimator and the model's description."""

    cal = this_machine_calibration()
    if cal is None or "numpy" not in cal.targets:
        return estimate_seconds, MODEL
    estimator = CalibratedEstimator(cal, stored_calibration_path())
    return estimator, estimator.model


def _read_calibration(path: str):
    if not os.path.exists(path):
        raise CommandError(f"no such calibration: {path}", 2)
    try:
        return calibration.load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"cannot read calibration {path}: {exc}") from None


def _print_table(report) -> None:
    """rich on a terminal where it is installed; plain text for pipes, logs and without rich."""

    if sys.stdout.isatty():
        try:
            from rich.console import Console  # optional dependency
        except ImportError:
            pass
        else:
            render_rich(report, Console())
            return
    sys.stdout.write(render_plain(report))


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(f"wrote {path}", file=sys.stderr)
