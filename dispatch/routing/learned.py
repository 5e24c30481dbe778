"""What a script's runs learned, kept for its next run.

A script run once is a process that starts knowing nothing: which calls are large, which target
repaid its start-up. Each run of a script file (``python script.py`` importing dispatch, or
``python -m dispatch run script.py``) leaves, at its end, one small file in the user's cache
folder (``cachefiles.cache_dir()`` / ``learned-v1``), named by the script's path and holding:

- the script's path and the SHA-256 of its text (a changed script starts afresh);
- per call site (the script's line that first made each kind of call), the kind of call, about
  how many such calls ran, the seconds one took on each target measured (and from how many
  samples), and what the router priced one to save on each target that was not brought up for it;
- the run's time from its first routed call to its end, the targets it used, and the router's
  measured history (``History.to_json``), from which the next run starts;
- what other parts keep (``keep``): the seconds each background bring-up took and the kinds
  of call that regions' plans put on a device (``dispatch.routing.startup``), the large
  scikit-learn calls measured (``dispatch.sklearn``).

The next run reads it when its first call asks for a floor (``start``), and the router, once loaded,
from it (``begin``): ``wanted`` names the target whose predicted
saving over the whole run exceeds its start-up (``dispatch.routing.startup``), which is then
brought up in the background. Files are written whole (``cachefiles.write_text``: a unique
temporary file, then a rename), so processes running at once never see half of one; the last
to end wins. A file is at most ``MAX_SITES`` sites and ``MAX_BYTES`` bytes, the folder at most
``MAX_FILES`` files (the oldest go). A file that cannot be read is ignored, with one warning.

Processes with no script file (a notebook, ``python -c``, a REPL) keep nothing: they learn as
they run, as before. ``DISPATCH_LEARN=0`` turns it off; ``forget()`` (``dispatch.forget()``,
``python -m dispatch forget``) deletes what was kept.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from dispatch import targets
from dispatch.base import cachefiles, settings

__all__ = ["FOLDER", "MAX_FILES", "MAX_SITES", "begin", "describe", "earlier", "folder", "forget", "keep", "kept_for",
           "names_others", "path_for", "predicted", "priced", "site", "start", "wanted"]

VERSION = 1
FOLDER = f"learned-v{VERSION}"
MAX_SITES = 256
MAX_FILES = 256
MAX_BYTES = 2 * 2**20

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_script: tuple[str, str] | None = None  # (path, sha256) of this process's script, once found
_previous: dict[str, Any] | None = None  # what its earlier runs kept
_started_run = False  # ``start`` ran: this run is kept at its end
_history: Any = None  # the router's History, recorded at the end (none where the router never loaded)
_samples_at_start: dict[tuple, dict[str, int]] = {}
_sites: dict[tuple, str] = {}
_saves: dict[tuple, dict[str, float]] = {}
_started = 0.0
_warned = False
_sections: dict[str, Any] = {}  # name -> what makes it at the run's end (``keep``)


def folder() -> Path:
    """Where learned files live."""
    return cachefiles.cache_dir() / FOLDER


def _this_script() -> tuple[str, str] | None:
    """The running script's absolute path and text's SHA-256, or ``None`` (no script file)."""
    main = sys.modules.get("__main__")
    file = getattr(main, "__file__", None)
    if not file or not file.endswith(".py"):
        return None
    path = os.path.realpath(file)
    if path.startswith(_PACKAGE):  # ``python -m dispatch info``: a command of dispatch's, not a program
        return None
    try:
        with open(path, "rb") as handle:
            digest = cachefiles.sha256(handle.read())
    except OSError:
        return None
    return path, digest


def path_for(script: str) -> Path:
    """The file kept for ``script`` (a path)."""
    name = cachefiles.sha256(os.path.realpath(script).encode())[:24]
    return folder() / f"{name}.json"


def _read(path: Path) -> dict[str, Any] | None:
    """A kept file's entry; ``None`` where there is none, or (with one warning) where it is unusable."""
    global _warned
    try:
        data = cachefiles.read_json(path, MAX_BYTES)
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("sites"), list):
            raise ValueError("not a file of what a script learned (or of another version)")
        return data
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        if not _warned:
            _warned = True
            warnings.warn(f"dispatch: ignoring what earlier runs of this script learned ({path}: {exc})",
                          RuntimeWarning, stacklevel=2)
        return None


def start() -> None:
    """At the first floor a call asks for (``dispatch.routing.floors``), router or not: read what
    this script's earlier runs kept, and keep this run at its end (once)."""
    global _script, _previous, _started, _started_run
    if _started_run:
        return
    _started_run = True
    _started = time.perf_counter()
    if not settings.learn():
        return
    _script = _this_script()
    if _script is None:
        return
    entry = _read(path_for(_script[0]))
    if entry is not None and entry.get("sha256") == _script[1]:
        _previous = entry
    atexit.register(record)


def kept_for() -> float | None:
    """Seconds this run has run (from its first call) where it is kept for the script's next run,
    which then starts from what it learned; ``None`` where nothing is kept (no script, learning off)."""
    return time.perf_counter() - _started if _script is not None else None


def begin(history: Any) -> None:
    """At the router's first routed call: what this script's earlier runs kept, read into
    ``history``, and this run's measurements in it recorded at its end."""
    global _history
    if _history is not None:
        return
    start()
    _history = history
    kept = (_previous or {}).get("history")
    if isinstance(kept, dict):
        try:
            history.load_data(kept, str(path_for(_script[0])))
        except (ValueError, OSError) as exc:
            _read_failed(exc)
    _samples_at_start.update({k: {t: s.samples for t, s in per.items()} for k, per in history.stats.items()})


def names_others() -> bool:
    """Whether what earlier runs kept names a target other than NumPy (used, measured or priced):
    then the router, not the seed's floors, weighs this run's first calls (``wanted``)."""
    try:
        entry = _previous or {}
        if any(t != "numpy" for t in entry.get("targets", ())):
            return True
        return any(t != "numpy" for s in entry.get("sites", ()) for t in (*s.get("seconds", ()), *s.get("saves", ())))
    except (TypeError, AttributeError):  # a hand-edited file: the router reads it, and says what it ignores
        return True


def _read_failed(exc: Exception) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"dispatch: ignoring what earlier runs of this script learned ({exc})", RuntimeWarning,
                      stacklevel=3)


def site(key: tuple) -> None:
    """Note where the program made a kind of call first (once per kind): the first frame outside dispatch."""
    if key in _sites or _script is None:
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    _sites[key] = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else "?"


def priced(key: tuple, target: str, saving_s: float) -> None:
    """The router priced a call of kind ``key`` to save ``saving_s`` on ``target``, not brought up for it."""
    if _script is not None:
        _saves.setdefault(key, {})[target] = saving_s


def keep(section: str, make: Any) -> None:
    """Keep ``make()`` (JSON) under ``section`` at the run's end: what another part learned
    (``dispatch.sklearn``: the large calls it measured); ``earlier(section)`` reads it back."""
    _sections[section] = make


def earlier(section: str) -> Any:
    """What the script's earlier runs kept under ``section`` (``keep``), or ``None``."""
    return (_previous or {}).get(section)


# ---- what the earlier runs predict ------------------------------------------------------------------


def predicted(entry: dict[str, Any] | None = None) -> dict[str, float]:
    """Seconds a run is predicted to save on each target, from an entry (this script's earlier runs)."""
    from dispatch.routing.history import _first_samples  # (the router's history: not loaded for the seed's floors)

    entry = _previous if entry is None else entry
    totals: dict[str, float] = {}
    for s in (entry or {}).get("sites", []):
        try:
            calls = float(s.get("calls", 0))
            seconds = {t: float(v) for t, v in s.get("seconds", {}).items()}
            saves = {t: float(v) for t, v in s.get("saves", {}).items()}
            samples = {t: int(v) for t, v in s.get("samples", {}).items()}
        except (TypeError, ValueError, AttributeError):
            continue
        for target in {*seconds, *saves} - {"numpy"}:
            measured = seconds["numpy"] - seconds[target] if "numpy" in seconds and target in seconds else None
            # A target's first samples of a kind may each pay a one-time cost (CuPy compiling a
            # kernel its disk cache lacked): measured from fewer, the saving is at least that
            # measured, and the router's price for it stands where it says more.
            settled = samples.get(target, _first_samples(target)) >= _first_samples(target)
            if measured is not None and (settled or target not in saves):
                each = measured
            elif measured is not None:
                each = max(measured, saves[target])
            else:
                each = saves.get(target, 0.0)
            if "numpy" in seconds:  # a call saves at most the whole time NumPy measured it take
                each = min(each, seconds["numpy"])
            totals[target] = totals.get(target, 0.0) + calls * each
    return totals


def wanted(startup_seconds: Any, planned: dict[str, float] | None = None) -> list[str]:
    """The target to bring up now, if any: the one whose predicted saving in this run exceeds its
    start-up (``startup_seconds(name)``) by the most. Calls made while it starts run on NumPy: the
    saving counted is the share of the run on NumPy left once the start-up has passed (calls
    spread evenly over it). The run on NumPy is the last run's time, plus what the target saved
    there where the last run used it: a run the target made short would otherwise seem to be
    all start-up, and the run after it would start as a first run does. One engine: a second
    would add its start-up. ``planned``: per target, what one pass of a region that the last runs'
    plans placed there saved; the run saves at least that (calls that ran only there, never
    measured on NumPy, predict no saving of their own)."""
    try:
        run_s = float((_previous or {}).get("run_s", 0.0))
        used = set((_previous or {}).get("targets", ()))
    except (TypeError, ValueError):
        run_s, used = 0.0, set()
    savings = predicted()
    for t, s in (planned or {}).items():
        savings[t] = max(savings.get(t, 0.0), s)
    net = {}
    for t, s in savings.items():
        cost = startup_seconds(t)
        on_numpy = run_s + (max(s, 0.0) if t in used else 0.0)
        left = max(0.0, 1.0 - cost / on_numpy) if on_numpy > 0 else 0.0
        net[t] = s * left - cost
    best = max(net, key=net.get, default=None)
    return [best] if best is not None and net[best] > 0 else []


# ---- keeping this run -------------------------------------------------------------------------------


def _calls(key: tuple, per: dict[str, Any]) -> float:
    """About how many calls of kind ``key`` this run made, from its timed ones (settled kinds are
    timed one call in several: ``history.calls_counted``)."""
    from dispatch.routing.history import calls_counted  # (loaded: ``per`` is its measurements)

    before = _samples_at_start.get(key, {})
    calls = 0.0
    for target, stat in per.items():
        calls += calls_counted(stat.samples) - calls_counted(before.get(target, 0))
    return calls


def entry() -> dict[str, Any] | None:
    """What this run would keep now (``None`` with no script, or learning off)."""
    if _script is None or not _started_run:
        return None
    stats = _history.stats if _history is not None else {}  # (none measured where the router never loaded)
    if stats or _saves:
        from dispatch.routing.history import _jsonable
    sites = []
    # Calls are counted from the timed ones, and a run times fewer where a target came up (its
    # calls are decided afresh while it starts, and settled kinds are timed one call in eight):
    # a kind's count is the larger of this run's and the last one's.
    before = {json.dumps(s.get("key")): s for s in (_previous or {}).get("sites", []) if isinstance(s, dict)}
    for key in {*stats, *_saves}:
        per = stats.get(key, {})
        calls = _calls(key, per) if per else 0.0
        try:
            raw = _jsonable(key)
        except (TypeError, ValueError):
            continue
        last = before.pop(json.dumps(raw), {})
        if not calls and key not in _saves and not last:
            continue
        try:
            calls = max(calls, float(last.get("calls", 0.0)))
            saves = {**{t: float(v) for t, v in last.get("saves", {}).items()}, **_saves.get(key, {})}
        except (TypeError, ValueError, AttributeError):
            saves = _saves.get(key, {})
        sites.append({"site": _sites.get(key, last.get("site", "?")), "key": raw, "calls": calls,
                      "seconds": {t: s.seconds for t, s in per.items()},
                      "samples": {t: s.samples for t, s in per.items()}, "saves": saves})
    # A kind of call an earlier run made and this one did not stays: this run may have made it
    # elsewhere (its inputs on the device already: a kept plan), and a site's time on NumPy is what
    # predicts the saving that brings the target up for the next run.
    sites += [s for s in before.values() if _whole(s)]
    sites.sort(key=lambda s: -s["calls"] * max(s["seconds"].values(), default=0.0))
    previous_runs = int((_previous or {}).get("runs", 0))
    try:
        history = json.loads(_history.to_json()) if _history is not None else (_previous or {}).get("history")
    except (TypeError, ValueError):
        history = None
    return {"version": VERSION, "script": _script[0], "sha256": _script[1], "runs": previous_runs + 1,
            "run_s": round(time.perf_counter() - _started, 6), "ended": time.time(),
            "targets": sorted(n for n in targets.registry.up() if n != "numpy"), "sites": sites[:MAX_SITES],
            "history": history, **_made_sections()}


def _whole(site: dict[str, Any]) -> bool:
    """Whether a kept site has the numbers a run sorts and predicts by (not a hand-edited one)."""
    seconds, calls = site.get("seconds"), site.get("calls")
    return isinstance(seconds, dict) and isinstance(calls, (int, float)) and all(
        isinstance(v, (int, float)) for v in seconds.values())


def _made_sections() -> dict[str, Any]:
    made = {}
    for name, make in _sections.items():
        try:
            made[name] = make()
        except Exception:  # one part's failure must not lose the rest
            continue
    return made


def record() -> None:
    """Write this run's entry (at exit); never raises: a program's end is not to be disturbed."""
    try:
        if not settings.learn():
            return
        data = entry()
        if data is None:
            return
        text = json.dumps(data)
        if len(text) > MAX_BYTES:
            data["history"] = None
            text = json.dumps(data)
        path = path_for(data["script"])
        cachefiles.write_text(path, text, sync=False)  # at the script's end: no fsync (see write_text)
        _prune(path.parent)
    except Exception:  # a full disk, a read-only cache: the next run starts afresh
        pass


def _prune(where: Path) -> None:
    """The oldest files go where the folder holds over ``MAX_FILES`` (each file's age is read only then)."""
    try:
        names = [n for n in os.listdir(where) if n.endswith(".json")]
        if len(names) <= MAX_FILES:
            return
        files = sorted((where / n for n in names), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in files[:-MAX_FILES]:
        try:
            old.unlink()
        except OSError:
            pass


# ---- looking and forgetting -------------------------------------------------------------------------


def describe(script: str) -> dict[str, Any] | None:
    """What is kept for ``script`` (``python -m dispatch info --script``).

    Parameters
    ----------
    script : str
        The script file.

    Returns
    -------
    dict or None
        Its entry (see the module docstring), with ``"current"`` (kept for the script's text as
        it is now), ``"file"`` and ``"predicted"`` (seconds a run is predicted to save on each
        target); ``None`` where nothing is kept.
    """
    path = path_for(script)
    data = _read(path)
    if data is None:
        return None
    try:
        with open(script, "rb") as handle:
            data["current"] = cachefiles.sha256(handle.read()) == data.get("sha256")
    except OSError:
        data["current"] = False
    data["file"] = str(path)
    data["predicted"] = predicted(data)
    return data


def forget(script: str | None = None) -> int:
    """Delete what scripts' earlier runs learned and kept (``dispatch.forget()``).

    Parameters
    ----------
    script : str, optional
        The script file whose entry to delete; every script's by default.

    Returns
    -------
    int
        How many files were deleted. The script's next run starts as its first did.
    """
    where = folder()
    paths = [path_for(script)] if script is not None else list(where.glob("*.json")) if where.is_dir() else []
    removed = 0
    for path in paths:
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            continue
    return removed
