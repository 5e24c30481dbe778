"""Where a fresh process's seconds go: interpreter start, each library's import, each routed
call (where it ran, why, what it moved), the engines brought up, and the interpreter's exit.

    python -m benchmarks.timeline -- python SCRIPT ARGS       # prints the breakdown
    python -m benchmarks.timeline --json t.json -- python -m dispatch run SCRIPT ARGS

A command is run with ``PYTHONPROFILEIMPORTTIME=1`` (CPython's own import timer, on stderr),
``DISPATCH_TRACE=1`` (every routed call recorded) and a ``sitecustomize`` that notes when the
interpreter was up and, in the last exit handler, the trace, the engines up and the bytes moved.
All three cost the run little (a few milliseconds), so a benchmark may time runs so watched
(``cold_start --sklearn --timeline``): an outlier then says where its seconds went.

Phases (seconds, wall clock): ``start`` (spawn to ``sitecustomize``: the interpreter and
``site``), ``imports`` by top-level package (CPython's cumulative figure for each top-level
import, wherever it happened: a routed call that brings an engine up imports its library inside
the call, so ``calls`` and ``imports`` overlap there), ``calls`` (each routed call's own
seconds, as the trace timed it), ``main`` (``sitecustomize`` to the last exit handler: the
script, its imports, and the exit handlers of dispatch that write what a run learned), ``exit``
(the last exit handler to the process's end: the interpreter's teardown, a device context's
destruction, freeing the script's arrays) and ``wall``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["parse_imports", "run", "summary", "watched_env"]

_SITE = '''\
import atexit, json, os, sys, time
_UP = time.time()


def _last():
    out = {"up": _UP, "last": time.time(), "calls": [], "bringup": {}, "up_targets": [], "moved": {}}
    tracing = sys.modules.get("dispatch.tracing")
    trace = getattr(tracing, "_process_trace", None)
    for g in (trace.grouped() if trace is not None else ()):
        out["calls"].append({"op": g.op, "shapes": g.shapes, "target": g.target, "reason": g.reason,
                             "calls": g.calls, "seconds": g.seconds, "bytes_moved": g.bytes_moved})
    bringup = sys.modules.get("dispatch.routing.bringup")
    if bringup is not None:
        out["bringup"] = bringup.seconds_taken()
    registry = sys.modules.get("dispatch.targets.registry")
    if registry is not None:
        out["up_targets"] = sorted(registry.up())
    staging = sys.modules.get("dispatch.targets._staging")
    if staging is not None:
        out["moved"] = staging.moved()
    with open(os.environ["TIMELINE_OUT"], "w") as f:
        json.dump(out, f)


if os.environ.get("TIMELINE_OUT"):
    atexit.register(_last)  # registered first, so run last: after dispatch's own exit handlers
'''


def watched_env(env: dict[str, str], folder: Path) -> tuple[dict[str, str], Path]:
    """``env`` with the watch turned on, and the file its process writes at exit."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SITE, encoding="utf-8")
    out = Path(tempfile.mkstemp(dir=folder, suffix=".json")[1])
    path = os.pathsep.join([str(folder), *filter(None, [env.get("PYTHONPATH")])])
    return {**env, "PYTHONPATH": path, "PYTHONPROFILEIMPORTTIME": "1", "DISPATCH_TRACE": "1",
            "TIMELINE_OUT": str(out)}, out


def parse_imports(stderr: str) -> tuple[dict[str, float], str]:
    """(seconds by top-level package, of its top-level imports; stderr without the timer's lines)."""
    by: dict[str, float] = {}
    rest = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            rest.append(line)
            continue
        parts = line[len("import time:"):].split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue  # the header
        name = parts[2].rstrip()
        if name.startswith("  "):  # nested: counted in its top-level import's cumulative figure
            continue
        root = name.strip().split(".")[0]
        by[root] = by.get(root, 0.0) + int(parts[1]) / 1e6
    return by, "\n".join(rest)


def summary(launched: float, ended: float, stderr: str, marks: dict[str, Any] | None) -> dict[str, Any]:
    """The breakdown of one run (``run``'s result), from what the watch left."""
    imports, rest = parse_imports(stderr)
    out: dict[str, Any] = {"wall": ended - launched,
                           "imports": {k: round(v, 4) for k, v in sorted(imports.items(), key=lambda kv: -kv[1])
                                       if v >= 0.005}}
    if marks:
        out.update(start=marks["up"] - launched, main=marks["last"] - marks["up"], exit=ended - marks["last"],
                   calls=marks["calls"], bringup=marks["bringup"], up_targets=marks["up_targets"],
                   moved=marks["moved"])
    out["stderr_tail"] = rest[-1500:]
    return out


def run(command: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
        timeout: float = 600) -> tuple[subprocess.CompletedProcess | None, dict[str, Any]]:
    """Run ``command`` watched; (the completed process or ``None`` if it timed out, its breakdown)."""
    with tempfile.TemporaryDirectory(prefix="timeline-") as folder:
        watched, marks_file = watched_env(dict(os.environ if env is None else env), Path(folder))
        launched = time.time()
        try:
            done = subprocess.run(command, env=watched, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            return None, summary(launched, time.time(), err, None)
        ended = time.time()
        try:
            marks = json.loads(marks_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            marks = None
        return done, summary(launched, ended, done.stderr, marks)


def describe(t: dict[str, Any]) -> str:
    """A few lines: the phases, the imports that cost, and each routed call."""
    lines = [f"wall {t['wall']:.2f} s" + (f": start {t['start']:.2f}, main {t['main']:.2f}, exit {t['exit']:.2f}"
                                          if "main" in t else " (no marks: the process did not end normally)")]
    lines.append("  imports: " + ", ".join(f"{k} {v:.2f}" for k, v in t["imports"].items()))
    if t.get("bringup"):
        lines.append("  brought up in the background: " + ", ".join(f"{k} {v:.2f} s" for k, v in t["bringup"].items()))
    if "up_targets" in t:
        lines.append(f"  targets up: {', '.join(t['up_targets']) or '-'}; moved {t['moved']}")
    for c in t.get("calls", []):
        lines.append(f"  {c['op']} x{c['calls']} on {c['target']}: {c['seconds']:.3f} s, "
                     f"{c['bytes_moved'] / 1e6:,.0f} MB moved ({c['reason'][:150]})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.timeline", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the breakdown here too")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command (python SCRIPT ARGS...)")
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("no command given")
    done, t = run(command)
    print(describe(t))
    if a.json:
        a.json.write_text(json.dumps(t, indent=1), encoding="utf-8")
    return 1 if done is None else done.returncode


if __name__ == "__main__":
    sys.exit(main())
