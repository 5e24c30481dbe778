"""Run an unmodified script with its NumPy calls routed through dispatch.

`dispatch run SCRIPT ARGS...` behaves like `python SCRIPT ARGS...` (the script is
`__main__`, `sys.argv` is [SCRIPT, *ARGS], its folder is first on `sys.path`; its exit
status, output and tracebacks are Python's), except that the script and the modules next to
it (or below it) that import NumPy get dispatch instead. Libraries (scikit-learn, pandas,
anything installed, the standard library) keep real NumPy. scikit-learn, if the script
imports it, is accelerated with `dispatch.sklearn.accelerate()` (not with --no-sklearn); with
or without it, it takes the script's dispatch objects where it asks for NumPy's types (a
parameter grid's array, a RandomState: the NumPy one inside it, whose stream the script's draws
continue), as wherever dispatch is imported.

--report prints where each op ran and how long it took, on stderr, when the script ends (also
when it raises or calls sys.exit). --profile OUT.json records, per call site in the script's
own files, the op, shapes, dtypes, call count, time on the target it ran on and the estimated
time on every other target: this machine's calibration prices them, or the seed roofline
where the machine is not calibrated (--calibrate measures a quick calibration first). Merge it
with the source: `dispatch analyze --profile OUT.json PATH [--hardware GPU.json]`. While
tracing, every call is recorded, including ops called so often that routing stops timing them.

Options go before SCRIPT; everything after it is the script's.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from dispatch.cli import CommandError, writable
from dispatch.cli._script import ImportRedirect, ScriptError, compile_script, run_script

if TYPE_CHECKING:
    import argparse

HELP = "run a script with its NumPy calls routed through dispatch (and report or profile them)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    import argparse  # here: ``dispatch run SCRIPT`` builds no parser (``dispatch.cli._plain_run``)

    parser.add_argument("--report", action="store_true", help="print the trace summary (stderr) when the script ends")
    parser.add_argument(
        "--profile", metavar="OUT.json", help="write a per-call-site profile for `dispatch analyze --profile`"
    )
    parser.add_argument("--no-sklearn", action="store_true", help="do not accelerate scikit-learn")
    parser.add_argument(
        "--calibrate", action="store_true", help="if this machine is not calibrated, measure a quick calibration first"
    )
    parser.add_argument("script", metavar="SCRIPT", help="the Python file to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")


def run(args: argparse.Namespace) -> int:
    try:
        code = compile_script(args.script)
    except ScriptError as exc:
        raise CommandError(str(exc), exc.code) from None
    start_dir = os.getcwd()  # the script may change directory: paths are the caller's
    profile_path = os.path.abspath(writable(args.profile, "--profile")) if args.profile is not None else None

    cal, cal_path = _calibration(args.calibrate) if (args.profile or args.calibrate) else (None, None)
    on_sklearn = None if args.no_sklearn else _accelerate_sklearn
    redirect = ImportRedirect(os.path.dirname(os.path.abspath(args.script)), on_sklearn)
    argv = [args.script, *args.args]

    if not (args.report or args.profile):
        return run_script(code, argv, redirect)
    # the tracing and profiling machinery, imported only where asked for: a plain run starts sooner
    from dispatch import targets, tracing
    from dispatch.cli._record import build_profile
    from dispatch.routing import router

    available = list(targets.available()) if profile_path is not None else []
    saved = (tracing.SITES, tracing.SITE_FILTER, router.history.hot_calls_per_s)
    tracing.SITES = args.profile is not None
    tracing.SITE_FILTER = redirect.is_users_file
    router.history.hot_calls_per_s = float("inf")  # record every call: a profile counts them all
    router.history.hot.clear()
    started = time.perf_counter()
    status = 1
    trace = tracing.trace(aggregate=True)
    try:
        with trace:
            status = run_script(code, argv, redirect)
    finally:
        wall = time.perf_counter() - started
        tracing.SITES, tracing.SITE_FILTER, router.history.hot_calls_per_s = saved
        sys.stdout.flush()
        if args.report:
            trace.summary(file=sys.stderr)
        if profile_path is not None:
            profile = build_profile(trace, cal, cal_path, available, args.script, argv, status, round(wall, 6),
                                    start_dir)
            status = _write_profile(profile_path, args.profile, profile, status)
    return status


def _calibration(measure: bool) -> tuple[Any, str | None]:
    """This machine's calibration (measured first with ``measure`` if there is none) and its file."""
    from dispatch.cli._pricing import stored_calibration_path, this_machine_calibration  # lazy: as above

    cal = this_machine_calibration()
    if cal is None and measure:
        from dispatch.measure import calibrate  # lazy: the measuring code, only where a calibration is made

        print("dispatch run: this machine is not calibrated: measuring a quick calibration first", file=sys.stderr)
        cal = calibrate(quick=True, progress=sys.stderr.isatty())
    return cal, (str(stored_calibration_path()) if cal is not None else None)


def _accelerate_sklearn() -> None:
    """Called once the script has imported scikit-learn."""
    try:
        import dispatch.sklearn as accelerator  # lazy: only where the script imports scikit-learn
    except ImportError as exc:
        if getattr(exc, "name", None) not in ("dispatch.sklearn", None):
            print(f"dispatch run: note: scikit-learn is not accelerated: {exc}", file=sys.stderr)
        else:
            print(
                "dispatch run: note: scikit-learn is not accelerated: this dispatch has no dispatch.sklearn "
                "(NumPy calls are still routed)",
                file=sys.stderr,
            )
        return
    try:
        accelerator.accelerate()
    except Exception as exc:  # the accelerator must never break the user's script
        print(f"dispatch run: note: scikit-learn is not accelerated: {type(exc).__name__}: {exc}", file=sys.stderr)


def _write_profile(path: str, shown: str, profile: dict, status: int) -> int:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(profile, handle, indent=1)
            handle.write("\n")
    except OSError as exc:
        print(f"dispatch run: error: cannot write {shown}: {exc.strerror or exc}", file=sys.stderr)
        return status or 1
    calls = sum(c["count"] for c in profile["calls"])
    sites = len({c["site"] for c in profile["calls"]})
    print(f"dispatch run: wrote {shown} ({sites} call sites, {calls} calls)", file=sys.stderr)
    return status
