"""Start-up: what bringing a target up costs, once per process, and whether a call may pay it.

A target other than NumPy costs something before its first call: its library's import, the
device's context, the first kernel (CuPy compiles it or reads its cache; torch loads its
module). Together these take seconds, more than many scripts run (benchmarks/RESULTS.md,
"Cold start", has what a calibration measured).

The router asks ``admit(name, saving_s, key)`` before it brings a target up for a call that
does not force it (``router._reach``). A target comes up when:

- it is up already (or its library failed: then nothing is left to pay);
- this program's earlier runs (``dispatch.routing.learned``) predict that this run saves more
  on it than its start-up costs (from what their calls measured, or from what one pass of a
  region their plans placed there saved): it is brought up on a background thread
  (``bringup``) at the first routed call, NumPy serving meanwhile, and taken once it is ready;
- or, with no such prediction, this one call is priced to save more than the start-up. Where the
  target is starting in the background already, a call priced to save more than what is left of
  that bring-up waits for it, no longer than it would save, rather than run on NumPy: a first run
  would have brought the target up for less. What is left is the whole start-up (its import
  included; or what the bring-up took in the script's last run, where longer: a bring-up beside
  the program's own work takes longer than one alone) less the seconds it has run. A call of a
  kind that a region's plan placed on the target in the script's last runs (``planned``) is
  priced, for this wait, at what one pass of that region saved: the calls after it in the region
  follow its result there, where alone each would pay the copy back. A wait that ends before the
  bring-up does ends the waits for that target in this run. No other call waits;
- or calls priced out for it have, in this process, forgone as much as its start-up costs
  (``forgo``): it is brought up on a background thread then. This is the ski-rental rule: a
  long-lived process (a notebook, a service) never pays more than twice what knowing its future
  would have cost, and a short one pays nothing. In a script whose run is kept for its next
  (``learned``), the next run brings the target up from its first call; this run brings it up
  only once the start-up is within ``KEPT_MARGIN`` of the time it has run, so that a script run
  once stays within that margin of NumPy's time;
- or the program waits for its user (a notebook's cell has ended: ``idle``, which
  ``dispatch.notebook`` calls after each cell), no engine besides NumPy serves the target's device
  yet (nor, for a host engine, a device's), and calls priced out for the target have forgone
  ``IDLE_SHARE`` of its start-up in this process: it is brought up in the background then, while
  none of the program's work runs beside it, so that the next cell finds it up.

The start-up's price is this machine's calibration's (``dispatch.measure.startup_seconds`` times
it in fresh processes)
or, without one, ``SEED_S``: figures on the high side of what was measured, so that a script
is never made slower by an engine it did not need. A forced target is brought up at once,
whatever it costs (``Router.decide``): the user asked for it.
"""

from __future__ import annotations

import sys
from typing import Any

from dispatch import targets
from dispatch.routing import bringup, learned
from dispatch.routing.bringup import LIBRARY

__all__ = ["IDLE_SHARE", "KEPT_MARGIN", "LIBRARY", "SEED_S", "admit", "after_decide", "begin", "came_up", "coming",
           "failed", "forgo", "forgone", "idle", "note", "planned", "planned_before", "priced_out", "read_plans",
           "saving", "seconds", "up", "use_calibration"]

# (import, device context, first call) in seconds, where no calibration measured them: on the
# high side of what calibrations measured, so that an unmeasured start-up is not undersold.
SEED_S: dict[str, tuple[float, float, float]] = {
    "torch-cpu": (2.0, 0.0, 0.05),
    "torch-cuda": (2.0, 0.6, 0.1),
    "torch-mps": (2.0, 0.3, 0.1),
    "cupy": (0.3, 0.5, 0.5),
    "dask": (1.0, 0.0, 0.1),
}

# A kept script's run brings a target up mid-run only where its start-up is at most this share of
# the run so far: the margin over NumPy's time that a script's first run is allowed.
KEPT_MARGIN = 0.05

# While the program waits for its user, a target comes up once its priced-out calls have forgone
# this share of its start-up: the program pays nothing for it then, and cells like those already
# run repay its start-up within twenty; one that would barely use it does not hold its memory.
IDLE_SHARE = 1 / 20

_measured: dict[str, tuple[float, float, float]] = {}  # from the calibration in use
_saving: dict[tuple, dict[str, float]] = {}  # key priced out -> {target left down: what one call would save}
_forgone: dict[str, float] = {}  # target -> seconds its priced-out calls would have saved in this process
_deferred = False  # a decision made while a target was starting: not to be cached
_late: set[str] = set()  # targets whose bring-up outlasted a call's wait: no call waits for them again
_plans: dict[tuple, dict[str, float]] = {}  # key a plan placed on a target -> {target: one pass's saving}
_kept_plans: dict[tuple, dict[str, float]] | None = None  # the same, from the script's last runs (read once)
MAX_PLANNED = 256  # kinds of call kept, the largest savings first
_begun = False
_history: Any = None  # the router's History (``begin``): what the program's calls were


def use_calibration(cal: Any) -> None:
    """Price start-up by what ``cal`` measured (its ``startup`` entry), else by ``SEED_S``."""
    _measured.clear()
    found = getattr(cal, "extra", {}).get("startup", {}) if cal is not None else {}
    for name, parts in found.items() if isinstance(found, dict) else ():
        try:
            _measured[name] = (float(parts["import_s"]), float(parts["context_s"]), float(parts["first_call_s"]))
        except (KeyError, TypeError, ValueError):
            continue


def up(name: str) -> bool:
    """Whether ``name`` has nothing left to pay: NumPy, or probed already (working or not)."""
    return name == "numpy" or targets.registry.tried(name)


def coming(name: str) -> bool:
    """Whether ``name`` serves calls (NumPy, or up and working; not one whose probe failed) or is
    being brought up in the background: a second engine is priced against it, so that one engine
    comes up where one serves."""
    return name == "numpy" or targets.registry.is_up(name) or bringup.state(name) == "starting"


def failed(name: str) -> bool:
    """Whether ``name`` was brought up and does not work here (its probe failed): it serves nothing."""
    return up(name) and not coming(name)


def seconds(name: str) -> float:
    """What bringing ``name`` up would cost now: 0 once it is up; its library's import is left out
    where the library is loaded already."""
    if up(name) or name == "numpy":
        return 0.0
    imported, context, first = _parts(name)
    if LIBRARY.get(name) in sys.modules:
        imported = 0.0
    return imported + context + first


def _parts(name: str) -> tuple[float, float, float]:
    """``name``'s (import, device context, first call) seconds, as measured or seeded."""
    return _measured.get(name) or SEED_S.get(name, (1.0, 0.0, 0.0))


def begin(history: Any) -> None:
    """At the first routed call: read what this program's earlier runs learned into ``history``,
    and start bringing up, in the background, the target they predict this run will repay."""
    global _begun, _history
    if _begun:
        return
    _begun, _history = True, history
    learned.begin(history)
    learned.keep("bringup", _bringups)
    learned.keep("plans", _plans_kept)
    for name in learned.wanted(seconds, _planned_savings()):
        bringup.start(name, _made())


def _made(key: tuple | None = None) -> frozenset[str]:
    """The kinds of call (op names) the program has made, with ``key``'s: in this run so far and in
    the earlier runs read (``learned``). A bring-up loads the device's libraries these need only."""
    ran = tuple(_history.ran) if _history is not None else ()
    return frozenset([kind[0] for kind in ran] + ([key[0]] if key else []))


def admit(name: str, saving_s: float | None, key: tuple | None = None, on_numpy_s: float | None = None) -> bool:
    """Whether the router may bring ``name`` up for a call priced to save ``saving_s`` there
    (``None``: a policy that prices no call, the seed's table; then only a target whose library
    the program has loaded itself). ``on_numpy_s``: what the call would save there against NumPy,
    where ``saving_s`` is against another engine up: the script's next run, which starts with
    no engine up, is told that (``learned.priced``), so that it weighs each target's saving
    against the same NumPy."""
    global _deferred
    if up(name):
        return True
    if key is not None and saving_s is not None:
        learned.priced(key, name, saving_s if on_numpy_s is None else on_numpy_s)
    state = bringup.state(name)
    if state == "ready":
        return True
    if state == "starting":
        # a call that alone repays what is left of the bring-up under way waits for it, no longer
        # than it would save there (the whole start-up less its seconds so far: the bring-up's
        # half-done import is in sys.modules already, so ``seconds`` would price it at nothing)
        if saving_s is not None and key is not None:
            saving_s = max(saving_s, planned_before(key).get(name, 0.0))
        if saving_s is not None and name not in _late and saving_s > max(_left(name), 0.0):
            if bringup.wait(name, saving_s) == "ready":
                return True
            _late.add(name)
        _deferred = True  # NumPy serves this call; the next of its kind is decided again
        return False
    if saving_s is None:
        return LIBRARY.get(name) in sys.modules
    if saving_s > seconds(name):
        return True
    if key is not None:
        _price_out(key, name, saving_s)
    return False


def _kept_bringups() -> dict[str, float]:
    """Seconds each bring-up took in the script's last runs (kept with what they learned); none
    where the file holds something else (a hand-edited one)."""
    kept = learned.earlier("bringup")
    try:
        return {str(name): float(s) for name, s in kept.items()} if kept else {}
    except (AttributeError, TypeError, ValueError):
        return {}


def _bringups() -> dict[str, float]:
    """Seconds each bring-up took, this run's over the last ones' (kept for the next run)."""
    return {**_kept_bringups(), **bringup.seconds_taken()}


def _left(name: str) -> float:
    """Seconds left of ``name``'s bring-up under way: the whole start-up (or the script's last
    bring-up of it, where longer) less the seconds it has run."""
    return max(sum(_parts(name)), _kept_bringups().get(name, 0.0)) - bringup.elapsed(name)


def planned(key: tuple, name: str, saving_s: float) -> None:
    """A region's plan placed calls of kind ``key`` on ``name``, one pass of the region saving
    ``saving_s``: kept for the script's later runs, whose calls of that kind, made while ``name``
    is coming up, wait for it for as much (``admit``)."""
    per = _plans.setdefault(key, {})
    per[name] = max(saving_s, per.get(name, 0.0))


def planned_before(key: tuple) -> dict[str, float]:
    """The targets the script's last runs' plans put calls of kind ``key`` on, with what one pass
    of each region saved (``planned``)."""
    return _earlier_plans().get(key, _NONE)


_NONE: dict[str, float] = {}


def _earlier_plans() -> dict[tuple, dict[str, float]]:
    """What the script's last runs kept of their plans (``planned``), read once."""
    global _kept_plans
    if _kept_plans is None:
        _kept_plans = read_plans(learned.earlier("plans"))
    return _kept_plans


def _planned_savings() -> dict[str, float]:
    """Per target, the most that one pass of a region placed there by the script's last runs'
    plans saved (``planned``)."""
    most: dict[str, float] = {}
    for per in _earlier_plans().values():
        for name, saving_s in per.items():
            most[name] = max(most.get(name, 0.0), saving_s)
    return most


def read_plans(rows: Any) -> dict[tuple, dict[str, float]]:
    """Kept plans' rows (``_plans_kept``'s) by kind of call and target; a row that is something
    else (a hand-edited one) is left out."""
    from dispatch.routing.history import _key, _name, _number  # (the router's: not loaded for the seed's floors)

    found: dict[tuple, dict[str, float]] = {}
    for row in rows if isinstance(rows, list) else ():
        try:
            raw, name, saving_s = row
            key, name, saving_s = _key(raw), _name(name), _number(saving_s)
        except (TypeError, ValueError, KeyError):
            continue
        found.setdefault(key, {})[name] = saving_s
    return found


def _plans_kept() -> list[list]:
    """The plans' savings by kind of call, this run's over the last ones', the largest first (kept for the next run)."""
    from dispatch.routing.history import _jsonable

    merged = {k: dict(per) for k, per in _earlier_plans().items()}
    for k, per in _plans.items():
        merged.setdefault(k, {}).update(per)
    rows = [[_jsonable(k), name, s] for k, per in merged.items() for name, s in per.items()]
    rows.sort(key=lambda row: -row[2])
    return rows[:MAX_PLANNED]


def note(key: tuple, name: str, saving_s: float) -> None:
    """A call of kind ``key`` priced to save ``saving_s`` on ``name``, left down for its start-up
    (by a region's plan): the script's later runs are told (``learned.priced``), and each such
    call that runs counts toward bringing it up (``forgo``)."""
    learned.priced(key, name, saving_s)
    _price_out(key, name, saving_s)


def _price_out(key: tuple, name: str, saving_s: float) -> None:
    if saving_s > 0.0:
        _saving.setdefault(key, {})[name] = saving_s


def forgo(key: tuple, calls: float) -> None:
    """``calls`` calls of kind ``key`` ran where they were: add what they would have saved on the
    targets left down for them, and start bringing up, in the background, one whose forgone
    saving has reached its start-up (the router takes it once it is ready)."""
    per = _saving.get(key)
    if not per:
        return
    for name, saving_s in tuple(per.items()):  # (``came_up`` may empty it from a bring-up's thread)
        total = _forgone[name] = _forgone.get(name, 0.0) + saving_s * calls
        cost = seconds(name)
        if total >= cost and not up(name) and bringup.state(name) is None and _within_margin(cost):
            bringup.start(name, _made(key))


def _within_margin(cost: float) -> bool:
    """Whether a start-up of ``cost`` seconds may begin mid-run (``KEPT_MARGIN``)."""
    ran = learned.kept_for()
    return ran is None or cost <= KEPT_MARGIN * ran


def idle() -> str | None:
    """The program waits for its user (``dispatch.notebook`` calls this after each cell): start
    bringing up, in the background, the target whose priced-out calls have forgone the largest share
    of its start-up in this process (the one that repays it soonest), where that share has reached
    ``IDLE_SHARE``; none while one is coming up (the others are priced against it once it is up:
    ``came_up``), none for a device another engine besides NumPy serves already (CuPy up,
    torch-cuda), and no host engine while a device's engine serves (CuPy up, torch-cpu): a second
    engine adds only what it saves over those up, on the calls the device's plans left on the
    host, and its arrival prices and plans the program's calls afresh and measures them on it, so
    it comes up by the ski-rental rule alone (``forgo``). The name started, if any."""
    if bringup.starting():
        return None
    served = {_device(name) for name in targets.registry.up() if name != "numpy"}
    host = _device("numpy")
    if served - {host}:  # a device's engine serves: a host engine waits for the ski-rental rule too
        served.add(host)
    found = []
    for name, total in tuple(_forgone.items()):
        if not up(name) and bringup.state(name) is None and _device(name) not in served:
            share = total / max(seconds(name), 1e-9)
            if share >= IDLE_SHARE:
                found.append((share, name))
    if not found:
        return None
    name = max(found)[1]
    return name if bringup.start(name) else None  # every library: none of the program's work waits on them


def _device(name: str) -> str | None:
    """The kind of device ``name`` computes on (``"cpu"``, ``"cuda"``...), or ``None`` where it is no
    registered target."""
    try:
        return targets.registry.spec(name).device
    except ValueError:
        return None


def came_up(name: str) -> None:
    """``name`` is up: what the targets left down were priced to save, and have forgone, was
    priced against the engines up before; no call is priced out any longer, and what they
    forgo counts again from here, priced against ``name`` too (one engine per device: CuPy
    up, torch-cuda's import is not paid for what CuPy now saves)."""
    _saving.clear()
    for other in [n for n in _forgone if n != name]:
        _forgone.pop(other, None)


def saving(key: tuple, name: str) -> float:
    """What one call of kind ``key`` was priced to save on ``name``, left down (0 if none)."""
    return _saving.get(key, {}).get(name, 0.0)


def forgone() -> dict[str, float]:
    """Seconds, per target left down, that calls priced out for its start-up would have saved so far."""
    return dict(_forgone)


def priced_out(key: tuple) -> bool:
    """Whether a target priced cheaper than NumPy for calls of kind ``key`` was left down for its
    start-up: NumPy's decision for them is not final (no floor is learned over them), as the
    target may come up later in the run."""
    return key in _saving


def after_decide(key: tuple, cacheable: bool) -> bool:
    """Whether the decision just made for ``key`` may be cached: not while a target it could have
    taken was starting (once ready, the call is decided again). Notes the call site once per key."""
    global _deferred
    learned.site(key)
    if _deferred:
        _deferred = False
        return False
    return cacheable
