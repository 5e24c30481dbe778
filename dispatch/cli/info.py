"""Show this machine as dispatch sees it: the CPU, Python and the array libraries, the GPUs,
which targets can run calls here (and why the others cannot), whether the machine is
calibrated, which routing policy is in effect, and the process tuning dispatch applies.

--json prints the same as one JSON object (version 1):

    {"version": 1,
     "machine": {"cpu": "...", "cpu_count": 16, "platform": "...", "python": "3.11.7",
                 "libraries": {"numpy": "2.4.6", "torch": "2.13.0", "cupy": null, "scikit-learn": "1.9.1"}},
     "gpus": [{"target": "cupy", "name": "NVIDIA H100 80GB HBM3", "driver": 13000, "memory": 85...}],
     "targets": {"numpy": {"available": true, "device": "cpu", "tier": "SCALAR"},
                 "cupy": {"available": false, "reason": "cupy cannot be imported: ..."}, ...},
     "calibration": {"path": "...", "fingerprint": "...", "stored": false, "outdated": false,
                     "created": null, "quick": null, "seconds": null, "targets": [], "others": []},
     "routing": {"policy": "seed", "forced": null, "note": "..."},
     "fast_path": "compiled",
     "learned": {"enabled": true, "folder": "...", "files": 3,
                 "asked": null, "script": null},  # with --script: the script asked of, what is kept for it
     "tuning": {"OMP_WAIT_POLICY": "PASSIVE (set by dispatch)", "THP_MEM_ALLOC_ENABLE": "...",
                "glibc heap thresholds": "...", "blas pool": "openblas, 16 threads", ...}}
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from typing import Any

from dispatch import config, targets
from dispatch.arrays import _compiled
from dispatch.base import settings, tuning
from dispatch.cli import CommandError
from dispatch.routing import calibration, learned, router, startup

HELP = "show the machine, its targets, and the calibration and routing policy in effect"

# What --json and the table report for each library, by the name a user installs.
_LIBRARIES = (("numpy", ("numpy",)), ("torch", ("torch",)), ("cupy", ("cupy-cuda13x", "cupy-cuda12x", "cupy")),
              ("scikit-learn", ("scikit-learn",)))

COLD_START = (
    "Not calibrated: routing uses the seed's MoE table (cold start), which does not know this "
    "machine and starts no engine the program has not imported itself: a program that imports "
    "neither torch nor CuPy, and connects no Dask cluster, runs every call on NumPy. Run `python -m "
    "dispatch calibrate` (about 15-25 s; --quick a few seconds without a GPU, 10-20 s with one) to route by "
    "what this machine measures."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    parser.add_argument("--script", metavar="SCRIPT", help="also show what earlier runs of SCRIPT learned and kept")


def run(args: argparse.Namespace) -> int:
    if args.script is not None and not os.path.isfile(args.script):
        raise CommandError(f"{args.script}: no such file", code=2)
    info = collect(args.script)
    if args.json:
        json.dump(info, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(info))
    return 0


def collect(script: str | None = None) -> dict[str, Any]:
    """Everything ``info`` shows, as the JSON object of the module docstring."""

    machine = calibration.machine()
    found = machine.get("libraries", {})
    libraries = {name: next((found[d] for d in dists if d in found), None) for name, dists in _LIBRARIES}
    available = targets.available()
    reasons = targets.unavailable()
    table: dict[str, dict[str, Any]] = {}
    for name in targets.names():
        if name in available:
            target = available[name]
            table[name] = {"available": True, "device": str(target.device), "tier": target.tier.name}
        else:
            table[name] = {"available": False, "reason": reasons.get(name, "not probed")}

    fingerprint = calibration.fingerprint(machine)
    path = calibration.cache_dir() / f"calibration-{fingerprint}.json"
    cal = calibration.load()
    others = sorted(str(p) for p in path.parent.glob("calibration-*.json") if p != path) if path.parent.is_dir() else []
    state: dict[str, Any] = {
        "path": str(path),
        "fingerprint": fingerprint,
        "stored": cal is not None,
        # a file there that is not used: made by a dispatch that measured other things, or unreadable
        "outdated": cal is None and os.path.lexists(path),
        "created": cal.created if cal else None,
        "quick": cal.quick if cal else None,
        "seconds": cal.seconds if cal else None,
        "targets": sorted(cal.targets) if cal else [],
        "others": others,
    }
    forced = config.get_backend()
    policy = router.policy()
    if forced != "auto":
        note = f"every call is forced onto {forced} (DISPATCH_BACKEND or dispatch.set_backend)"
    elif policy == "cost":
        note = "routing by this machine's calibration (cost model, corrected by measured calls)"
    else:
        note = COLD_START
    return {
        "version": 1,
        "machine": {
            "cpu": machine.get("cpu"),
            "cpu_count": machine.get("cpu_count"),
            "platform": machine.get("platform"),
            "python": found.get("python"),
            "libraries": libraries,
        },
        "gpus": machine.get("gpus", []),
        "targets": table,
        "calibration": state,
        "routing": {"policy": policy, "forced": None if forced == "auto" else forced, "note": note},
        # small host calls: compiled (dispatch/arrays/_fastpath.c), or the Python path and why
        "fast_path": _compiled.STATUS,
        # process tuning: what dispatch sets (when routing first needs it) and the thread pools
        "tuning": dict(tuning.describe()),
        "learned": _learned(script),
    }


def _learned(script: str | None) -> dict[str, Any]:
    """Where what scripts' runs learned is kept, and (for ``script``) what is kept for it."""
    where = learned.folder()
    files = len(list(where.glob("*.json"))) if where.is_dir() else 0
    kept = learned.describe(script) if script is not None else None
    if kept is not None:
        kept.pop("history", None)  # the router's measured history: long, and in the file
    return {"enabled": settings.learn(), "folder": str(where), "files": files, "asked": script, "script": kept}


def _memory(nbytes: Any) -> str:
    return f", {nbytes / 2**30:.0f} GiB" if isinstance(nbytes, (int, float)) and nbytes else ""


def render(info: dict[str, Any]) -> str:
    """The text ``dispatch info`` prints."""
    m = info["machine"]
    libs = ", ".join(f"{name} {version or 'not installed'}" for name, version in m["libraries"].items())
    lines = [
        f"CPU:          {m['cpu']} ({m['cpu_count']} cores)",
        f"platform:     {m['platform']}",
        f"Python:       {m['python']}",
        f"libraries:    {libs}",
    ]
    gpus = info["gpus"]
    if gpus:
        lines.append("GPUs:         " + "; ".join(f"{g.get('name', '?')}{_memory(g.get('memory'))} (via {g['target']})"
                                              for g in gpus))
    else:
        lines.append("GPUs:         none found")
    lines += ["", "targets:"]
    width = max(len(name) for name in info["targets"])
    for name, t in info["targets"].items():
        if t["available"]:
            lines.append(f"  {name:<{width}}  available    {t['tier']} on {t['device']}")
        else:
            lines.append(f"  {name:<{width}}  unavailable  {t['reason']}")
    cal = info["calibration"]
    lines += ["", "calibration:"]
    if cal["stored"]:
        kind = "quick" if cal["quick"] else "full"
        lines.append(f"  {cal['path']}")
        lines.append(f"  measured {cal['created']} ({kind}, {cal['seconds']} s): {', '.join(cal['targets'])}")
    elif cal["outdated"]:
        lines.append(f"  {cal['path']}: not used, made by a version of dispatch that measured other things "
                     "(or unreadable): calibrate again")
    else:
        lines.append(f"  none stored for this machine (would be {cal['path']})")
    if cal["others"]:
        lines.append(f"  {len(cal['others'])} other calibration file(s) in the cache, for other hardware or "
                     "library versions (a library upgrade changes the fingerprint: calibrate again)")
    routing = info["routing"]
    forced = f", forced onto {routing['forced']}" if routing["forced"] else ""
    lines += ["", f"routing:      policy {routing['policy']}{forced}"]
    lines += textwrap.wrap(routing["note"], width=98, initial_indent="  ", subsequent_indent="  ")
    lines += ["", f"fast path:    {info['fast_path']}"]
    tuned = info.get("tuning", {})
    if tuned:
        lines += ["", "process tuning:"]
        width = max(len(name) for name in tuned)
        lines += [f"  {name:<{width}}  {state}" for name, state in tuned.items()]
    lines += ["", *_render_learned(info.get("learned", {}))]
    return "\n".join(lines) + "\n"


def _plans(rows: Any) -> dict[str, tuple[int, float]]:
    """The kinds of call the kept plans put on each target, and the most one pass saved."""
    found: dict[str, tuple[int, float]] = {}
    for per in startup.read_plans(rows).values():
        for name, saving_s in per.items():
            kinds, best = found.get(name, (0, 0.0))
            found[name] = (kinds + 1, max(best, saving_s))
    return found


def _render_learned(kept: dict[str, Any]) -> list[str]:
    state = "on" if kept.get("enabled") else "off (DISPATCH_LEARN=0)"
    lines = [f"learned:      {state}; {kept.get('files', 0)} script(s) kept in {kept.get('folder')}"]
    entry = kept.get("script")
    if not entry and kept.get("asked"):  # said, so that an empty answer is not read as no answer
        lines.append(f"  nothing kept for {kept['asked']} (no run of it kept, or forgotten)")
    if entry:
        current = "" if entry.get("current") else " (for an earlier version of the script: not used)"
        lines.append(f"  {entry['script']}: {entry['runs']} run(s), the last {entry['run_s']:.3f} s from its first "
                     f"routed call, targets {', '.join(entry['targets']) or 'numpy only'}{current}")
        for target, seconds in sorted(entry.get("predicted", {}).items()):
            saving = f"{seconds:.3f} s a run" if seconds >= 0 else f"none ({-seconds:.3f} s a run lost there)"
            lines.append(f"  predicted saving on {target}: {saving}")
        for target, (kinds, best) in sorted(_plans(entry.get("plans")).items()):
            lines.append(f"  loops planned on {target}: {kinds} kind(s) of call, a pass saving up to {best:.3f} s")
        for site in entry["sites"][:10]:
            times = ", ".join(f"{t} {s * 1e3:.3g} ms" for t, s in site["seconds"].items())
            calls = round(site["calls"])
            # (a kind of call, named by where the script first made it: its calls may come from other lines too)
            plural = "" if calls == 1 else "s"
            lines.append(f"  {site['key'][0]} (first at {site['site']}), about {calls} call{plural}" +
                         (f"; one took {times}" if times else ""))
    return lines
