"""Trials: a call that sends host data to a device stays there only if the program runs faster so.

A call's own timing cannot see what its choice costs the calls after it: its result coming back
to the host for the next call, then going out again, a device's launch latency on a chain of
small calls. The cost model and the placement credit price those from estimates, and on a chain
of calls of a millisecond or less the estimates can be wrong by the whole gain. So where the
router sends a kind of call's host data to a device, the choice is put on trial: the program is
timed from each such call to the next one, in blocks of ``BLOCK`` calls, with the call on the
device, then on the host (NumPy), alternately, each side warmed up untimed first (``BLOCKS``).
A third side runs every call of the program on NumPy (``alone``): the program as plain
NumPy runs it, the bar a device must clear. The host wins unless the program ran clearly faster
with the call on the device (``DEVICE_MARGIN``; any faster, where NumPy alone is far slower:
``DEVICE_BOUND``) than with it on the host and than on NumPy alone: the host is what the
program ran before, and NumPy alone what it runs without dispatch. Each trial times one call's
move with the others where they are; they moved by trials before it and by their own
measurements (a result's next calls follow it to the device), so a chain of moves, each a small
gain on its own, could leave the program slower than NumPy. Timing NumPy alone beside it keeps
each device verdict one the whole program gains from.

A fourth side runs every call the device can run there (``all_device``). Each trial judges one
call's move with the others where they are, so a program whose calls each lose on the device
alone (the copy of their host inputs is not repaid by one call) never moves, though it may run
faster with all of them there: a loop that the first trials left on the host stays there, and
so do the floors it learned. Where the program ran faster with every call on the device than on
each other side, by ``DEVICE_MARGIN``, the verdict sends all the kinds of call that side moved
(``Trial.moved``, ``Trial.everything``), and the router keeps them there (``router._pin``), but
for host data under an op's round-trip floor, which the side sent only because it sent everything.

"Such a call" is the same op on the same dtypes, size and layout wherever its inputs are: a
loop that makes it with host data once and then with what the device left (k-means' centroids)
makes it once an iteration on either side; the router runs those calls on the host side on
NumPy (``router._on_kin_trial``). A program whose every period from one such call to the next
is longer than ``MAX_PERIOD_S`` on the device keeps the device without trying the host: its
calls are large enough for the estimates to hold, and a host side there could cost seconds.

One trial runs at a time, so each is timed with the others' calls settled; a kind of call that
qualifies meanwhile waits its turn, decided afresh at each call until it starts. A trial whose
kind of call stopped coming (its loop ended) gives way: once another kind of call has waited
for it ``PASSED_OVER`` times since its last call, or after ``STALE_S``. A period much
longer than the others (the program paused, or a benchmark switched policies between its
samples) is left out, as is one in which a target ran a kind of call for the first time in the
process (``targets.protocol.first_calls``): CuPy compiled its kernel then, or loaded it, and the
program's later periods pay neither. A host side far slower than the device (``CUT_RATIO``) is
cut short, by periods of neither kind.
"""

from __future__ import annotations

import math
import time
from typing import Any

from dispatch import targets
from dispatch.routing.decisions import DecisionKind, Watched

__all__ = ["TRIALS", "Trial", "Trials", "active", "all_device", "alone", "clear", "finish", "pause", "start",
           "verdict", "verdicts"]


def _fmean(values: list[float]) -> float:
    return math.fsum(values) / len(values)  # (``statistics`` loads ``decimal`` and ``fractions``: a script's start)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# Calls of a kind per block: the block's first period is left out (it runs on what the other
# side left), so three periods are timed.
BLOCK = 4
# The blocks, each a side and whether its periods are timed. Each side warms up untimed first:
# a device's first calls pay for kernels and plans, and on every side the calls after the one
# on trial meet inputs that now live elsewhere, new decisions that explore before they settle.
# Timing a side only after its warm-up keeps those costs off whichever side comes later (timed
# with them, the host loses races it should win). A clear verdict once each side was timed
# once ends the trial early.
# "numpy": every call on NumPy, as the program runs without dispatch; "all-device": every call the
# device can run there
SIDES = ("device", "numpy", "all-device", "host")
BLOCKS = (("device", False), ("device", True), ("numpy", False), ("numpy", True), ("all-device", False),
          ("all-device", True), ("host", False), ("host", True),
          ("device", True), ("numpy", True), ("all-device", True), ("host", True))
ALONE = ("numpy", "all-device")  # the sides that route every call of the program, not only the trial's
_EARLY_AT = (BLOCKS.index(("host", True)) + 1) * BLOCK  # calls made when each side was timed once
_FIRST_TIMED_AT = (BLOCKS.index(("device", True)) + 1) * BLOCK  # ...and when the device's first timed block ends
EARLY_RATIO = 1.5
# Every timed period of the device's first block this long keeps the device untried on the host
# (the shortest counts: a period of the device's first runs may still pay for compiling the
# kernels of the calls after it, which later runs do not).
MAX_PERIOD_S = 20e-3
# A trial whose kind of call has not come for this long is dropped, so that it does not keep the
# others waiting: the loop it timed has ended.
STALE_S = 5.0
# ...or sooner: once another kind of call waited for it this many times since it last came, so
# that one program's unfinished trial does not hold the next one's. A loop that still makes it comes back before
# another's calls pass it over this often, or that other's trial, once started, ends within a
# few of its calls.
PASSED_OVER = 2 * BLOCK
# Two host periods in a row this many times the device's mean, and longer than it by over
# MAX_PERIOD_S, end the trial for the device, warm-up or not: a host side that slow costs the
# program more than the trial can learn. A period in which a kernel was compiled does not count:
# the calls after it pay that once, and it would end trials the host should have won.
CUT_RATIO = 4.0
# A period this many times the median of the trial's periods is a pause, not the program.
PAUSE_RATIO = 5.0
# The device wins only where the program's periods with the call there are shorter than the
# host's by more than this share of them. The host's side is what the program ran before, and
# a device costs the program more than its periods show while the calls after it, meeting
# inputs that now live elsewhere, decide again: a narrow win for the device can leave the program
# slower than NumPy.
DEVICE_MARGIN = 0.15
# ...unless the program already runs this many times faster than on NumPy alone: its other calls
# live on a device, and the host's side is the one whose inputs cross the bus. The device then
# wins where the program ran faster with the call there at all, rather than send its data across
# the bus at every step.
DEVICE_BOUND = 1.5


class Trial:
    """The device and host decisions of one kind of call, and the program's periods under each."""

    __slots__ = ("device", "everything", "first_calls", "hopeless", "host", "last", "limit", "moved", "passed_over",
                 "periods", "seen", "touched")

    def __init__(self, device: Any, host: Any) -> None:
        self.device = device
        self.host = host
        self.seen = 0
        self.last: tuple[float, str] | None = None  # the previous call's time and side
        self.first_calls = 0  # ``targets.protocol.first_calls`` at the previous call
        self.touched = time.perf_counter()
        self.passed_over = 0  # calls of other kinds that waited for it since its own last call
        self.periods: dict[str, list[float]] = {side: [] for side in SIDES}
        self.hopeless = 0  # periods off the device in a row far longer than the device's (``_host_hopeless``)
        self.limit = STALE_S  # how long a period on NumPy or the device alone may last (``alone``)
        self.moved: dict[tuple, Any] = {}  # the decisions the all-device side made, by key (``router``)
        self.everything = False  # the verdict: every call the all-device side moved goes to the device

    def side(self) -> str | None:
        """The side of the next call: ``None`` once the schedule is done."""
        block = self.seen // BLOCK
        return BLOCKS[block][0] if block < len(BLOCKS) else None

    def next(self) -> tuple[Any, bool]:
        """The decision for this call, and whether it is the trial's verdict."""
        now = time.perf_counter()
        if self.last is not None:
            period = now - self.last[0]
            steady = targets.protocol.first_calls == self.first_calls  # no kernel compiled or loaded in it
            if steady:
                self._count(period)
            if self.last[1] in ("device", "all-device"):
                self.hopeless = 0
            elif steady and self._host_hopeless(period):
                self.device.kind = DecisionKind.TRIAL
                return self.device, True
        side = self.side()
        found = self.outcome(side)
        if found is not None:
            return found, True
        if side in ALONE and self.periods["device"]:
            self.limit = CUT_RATIO * _fmean(self.periods["device"]) + MAX_PERIOD_S
        self.seen += 1
        self.last, self.first_calls = (now, side), targets.protocol.first_calls
        self.touched = now
        self.passed_over = 0
        return (self.device if side in ("device", "all-device") else self.host), False

    def outcome(self, side: str | None) -> Any:
        found = self._outcome(side)
        if found is not None:
            found.kind = DecisionKind.TRIAL  # a verdict, whatever rule first made the decision
        return found

    def _outcome(self, side: str | None) -> Any:
        means = self._means()
        device = means["device"]
        if (device is not None and means["numpy"] is None and self.seen == _FIRST_TIMED_AT
                and min(self.periods["device"]) > MAX_PERIOD_S):
            self.device.reason += f" (not tried on the host: {device * 1e3:.0f} ms from one such call to the next)"
            return self.device
        if None in means.values():
            return self.host if side is None else None  # periods all lost to pauses: NumPy, as before
        rival_side = min(("host", "numpy"), key=means.__getitem__)  # the faster way without the device
        rival = means[rival_side]
        everything, others = means["all-device"], min(device, rival)
        at_early = self.seen == _EARLY_AT
        early = at_early and (rival > EARLY_RATIO * device or device > EARLY_RATIO * rival)
        # Early, the device side must win by EARLY_RATIO; once it has, against the host, the
        # all-device side needs only the margin over it: both move the call to the device.
        clear = at_early and (EARLY_RATIO * everything < others or (early and rival > device))
        if everything * (1 + DEVICE_MARGIN) < others and (side is None or clear):
            return self._everything(means)
        if side is not None and not early:
            return None
        us = _in_us(means)
        alone = ", every call on NumPy" if rival_side == "numpy" else ""
        name = self.device.target.name
        margin = 0.0 if means["numpy"] > DEVICE_BOUND * device else DEVICE_MARGIN
        everywhere = f"; {us['all-device']} with every call on {name}"  # the side that lost too, for the record
        if rival > device * (1 + margin):
            self.device.reason = (f"trial: the program ran faster with this call on {name} ({us['device']} against "
                                  f"{us['host']} with it on the host and {us['numpy']} with every call on NumPy, "
                                  f"from one such call to the next){everywhere}")
            return self.device
        if rival > device:
            self.host.reason = (f"trial: the program ran under {margin:.0%} faster with this call on {name} "
                                f"({us['device']} against {us[rival_side]} from one such call to the next{alone}): "
                                "the host keeps it")
        else:
            self.host.reason = (f"trial: the program ran faster with this call on the host ({us[rival_side]} against "
                                f"{us['device']} with it on {name} from one such call to the next{alone})")
        self.host.reason += everywhere
        return self.host

    def _everything(self, means: dict[str, float]) -> Any:
        """The all-device side's verdict: the device, for this call and every one it moved."""
        us = _in_us(means)
        self.device.reason = (f"trial: the program ran faster with every call on {self.device.target.name} "
                              f"({us['all-device']} against {us['device']} with this call alone there, "
                              f"{us['host']} with it on the host and {us['numpy']} with every call on NumPy, "
                              "from one such call to the next)")
        self.everything = True
        return self.device

    def _count(self, period: float) -> None:
        """Keep the period since the last call, if that call's block is timed and it was not the
        block's first (which runs on what the other side left)."""
        previous = self.seen - 1
        if previous % BLOCK != 0 and BLOCKS[previous // BLOCK][1]:
            self.periods[self.last[1]].append(period)

    def _host_hopeless(self, period: float) -> bool:
        """Two periods off the device in a row (with the call on the host or every call on NumPy;
        warm-up, timed, or a block's first) so much longer than the device's that the rest of the
        schedule would only cost the program: the device wins at once (one alone may be a pause)."""
        if not self.periods["device"]:
            return False
        device = _fmean(self.periods["device"])
        if period <= CUT_RATIO * device or period - device <= MAX_PERIOD_S:
            self.hopeless = 0
            return False
        self.hopeless += 1
        if self.hopeless < 2:
            return False
        alone = ", every call on NumPy" if self.last[1] == "numpy" else ""
        self.device.reason = (f"trial: the program ran faster with this call on {self.device.target.name} "
                              f"({device * 1e6:.0f} µs against {period * 1e6:.0f} µs from one such call to the "
                              f"next; the host's side cut short{alone})")
        return True

    def _means(self) -> dict[str, float | None]:
        """Each side's mean period, pauses left out (a side whose every period is one is
        ``inf``); ``None`` for a side with no period yet."""
        timed = [p for periods in self.periods.values() for p in periods]
        bound = PAUSE_RATIO * _median(timed) if timed else math.inf
        means: dict[str, float | None] = {}
        for side, periods in self.periods.items():
            kept = [p for p in periods if p <= bound]
            means[side] = _fmean(kept) if kept else (math.inf if periods else None)
        return means


def _in_us(means: dict[str, float]) -> dict[str, str]:
    """Each side's mean period as a verdict's reason gives it."""
    return {k: f"{v * 1e6:.0f} µs" for k, v in means.items()}


class Trials:
    """The trial running (at most one) and the verdicts of those that ended: the router's
    (``Router.trials``). ``changed`` is called whenever a trial starts or ends."""

    def __init__(self, changed: Any = None) -> None:
        self.running: Watched = Watched(changed or _nothing, added=True)  # at most one entry
        self.judged: dict[tuple, Any] = {}

    def active(self, key: tuple) -> Trial | None:
        return self.running.get(key)

    def verdict(self, key: tuple) -> Any:
        """The decision a finished trial of this kind of call chose, or ``None``."""
        return self.judged.get(key)

    def verdicts(self) -> dict[tuple, Any]:
        """Every finished trial's verdict, by the router's key of its kind of call."""
        return dict(self.judged)

    def alone(self) -> Trial | None:
        """The running trial, if it times the program on NumPy alone or on the device alone now:
        every call, of any kind, runs there until the trial's kind of call comes again
        (``router.decide``). A period there longer than the trial's ``limit`` (the loop ended, or
        that side is hopeless there) stops it, timed at that limit (a bound: the device wins by
        more), so that a program that moved on does not stay there."""
        for trial in self.running.values():
            if trial.last is None or trial.last[1] not in ALONE:
                return None
            now = time.perf_counter()
            if now - trial.last[0] <= trial.limit:
                return trial
            trial._count(trial.limit)
            trial.last = None
        return None

    def all_device(self) -> Trial | None:
        """The running trial, if every call the device can run runs there now (``alone``)."""
        trial = self.alone()
        return trial if trial is not None and trial.last[1] == "all-device" else None

    def start(self, key: tuple, device: Any, host: Any) -> bool:
        """Put a device decision on trial, unless another trial runs; ``True`` if it started."""
        running = self.running
        for other, trial in list(running.items()):
            if other == key:
                continue
            trial.passed_over += 1
            if trial.passed_over >= PASSED_OVER or time.perf_counter() - trial.touched > STALE_S:
                del running[other]  # its loop ended before its verdict: tried again if it comes back
        if not running and key not in self.judged:
            running[key] = Trial(device, host)
        return key in running

    def finish(self, key: tuple, chosen: Any = None) -> None:
        """End a trial with its verdict (``None``: dropped, the device refused the call)."""
        if chosen is not None:
            self.judged[key] = chosen
        if key in self.running:
            del self.running[key]

    def pause(self) -> None:
        """The program stops being timed for a while (a policy switch): no period spans it."""
        for trial in self.running.values():
            trial.last = None

    def clear(self) -> None:
        self.running.clear()
        self.judged.clear()


def _nothing() -> None:
    pass


# The process's trials (the router's), and this module's functions as its methods, for the
# code that names them here.
TRIALS = Trials()


def active(key: tuple) -> Trial | None:
    return TRIALS.active(key)


def verdict(key: tuple) -> Any:
    """The decision a finished trial of this kind of call chose, or ``None``."""
    return TRIALS.verdict(key)


def verdicts() -> dict[tuple, Any]:
    """Every finished trial's verdict, by the router's key of its kind of call."""
    return TRIALS.verdicts()


def alone() -> Trial | None:
    """``Trials.alone`` of the process's trials."""
    return TRIALS.alone()


def all_device() -> Trial | None:
    """``Trials.all_device`` of the process's trials."""
    return TRIALS.all_device()


def start(key: tuple, device: Any, host: Any) -> bool:
    """``Trials.start`` of the process's trials."""
    return TRIALS.start(key, device, host)


def finish(key: tuple, chosen: Any = None) -> None:
    """``Trials.finish`` of the process's trials."""
    TRIALS.finish(key, chosen)


def pause() -> None:
    TRIALS.pause()


def clear() -> None:
    TRIALS.clear()
