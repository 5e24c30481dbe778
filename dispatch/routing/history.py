"""Adaptive history: what calls actually took, so a wrong cost model gets corrected.

Per (op, dtypes, size bucket, residency, layout) and target: an exponentially weighted average
of measured seconds (a sample over ``OUTLIER_RATIO`` times it counts as that much) and a sample
count. The router blends it with the model's estimate, trusting it more as samples grow
(``confidence = n / (n + 2)``; a host call's timing of over a millisecond counts for more,
``_prior_samples``), and explores a plausible alternative a few times within a budget
(bounded epsilon-greedy, each exploration paid from what its kind of call has taken so far), so
a model that is wrong about a target learns it; a target that lost its only call is measured
once more (``retry``), and a second call faster than the first replaces it, since first calls
pay one-time costs; a device's first call of a kind in the process is no price at all (its
kernel's load or compilation, seconds with CuPy's disk cache empty). Only calls predicted to
take over ``sample_threshold_s`` (100 µs) are timed, and the first call of each kind on the
target chosen for it (a model wrong by orders of magnitude under the threshold is caught once,
then the threshold rules, which no op called more than ``hot_calls_per_s`` (10,000) times a
second can pass); such ops are "hot": not traced. GPU calls are timed with device events, read
back later without a host sync. The history can be saved and loaded (``save()``, ``load()``) in
the user's cache directory.
"""

from __future__ import annotations

import json
import math
import time
from _thread import allocate_lock  # threading.Lock, without loading threading: a script's start
from pathlib import Path
from typing import Any

from dispatch.base import cachefiles
from dispatch.base.devices import parse_device
from dispatch.base.records import Record
from dispatch.routing.decisions import CallKey
from dispatch.targets import registry

__all__ = ["HOST_TARGETS", "SETTLED_EVERY", "SETTLED_SAMPLES", "History", "Stat", "call_kind", "calls_counted",
           "settled"]


class Stat(Record):
    __slots__ = ("seconds", "samples")  # noqa: RUF023 - the fields, in order

    def __init__(self, seconds: float, samples: int) -> None:
        self.seconds = seconds
        self.samples = samples


HISTORY_VERSION = 3  # 2: keys carry the forced target and the layout; 3: products' and element-wise calls' layouts
# A kind of call's first samples on a target may each pay a one-time cost: on a device CuPy
# compiles an elementwise kernel per dtypes and dimension count (a 2-D view and a contiguous
# array are two kernels) and cuSOLVER builds its handle; on the host a thread pool starts, once.
# Until a target has this many samples of a kind of call, its estimate is the fastest it took,
# and a target the model says should win is measured again (``retry``). A host target keeps
# two, its one-time cost coming once: with three, a host target's steady cost would be judged by
# an unrepresentative fastest sample.
FIRST_SAMPLES = 3
_HOST_FIRST_SAMPLES = 2
HOST_TARGETS = registry.host_names()  # the targets computing in host memory (a live view)


# A kind of call measured this many times on the target chosen for it is timed one call in
# SETTLED_EVERY from then on: still corrected if it drifts, no longer paying a timing per call.
SETTLED_SAMPLES = 16
SETTLED_EVERY = 8


def settled(samples: int) -> bool:
    """Whether a kind of call with ``samples`` timings is timed one call in ``SETTLED_EVERY``
    (``calls_counted`` counts its later timings so)."""
    return samples >= SETTLED_SAMPLES


def calls_counted(samples: int) -> int:
    """About how many calls ``samples`` timings of a kind of call stand for (the first
    ``SETTLED_SAMPLES`` one each, each later one ``SETTLED_EVERY``)."""
    return samples if samples <= SETTLED_SAMPLES else SETTLED_SAMPLES + (samples - SETTLED_SAMPLES) * SETTLED_EVERY


# A sample over this many times a kind of call's average counts as this many times it: one slow
# call (a storm of page faults, another process's burst) moves the average by at most alpha x 0.5,
# while a real slow-down is still followed, 15 % a call. Unclipped, two such calls could price
# a call at several times its usual time and send it to a slower target.
OUTLIER_RATIO = 1.5


# What the model is worth against timings, in timings: ``PRIOR_SAMPLES`` against timings of a
# host call of up to ``STEADY_S``. A host timing's noise is mostly of a fixed size (a scheduler's
# tick, a burst of page faults), so a longer call's timing outweighs the model more: by the square
# root of its length, as a busy machine also slows whole calls. A device's timings weigh as a
# short call's: its first ones may each pay a kernel's compilation.
PRIOR_SAMPLES = 2.0
STEADY_S = 1e-3
# NumPy's first call of a kind pays a cold cache and a first touch of its pages, which inflate a
# timing of over this by less than ``explore_ratio``: such a timing is not retried where it lost
# by more (``History.retry``).
COLD_S = 10e-3


def _prior_samples(target: str, seconds: float) -> float:
    if target not in HOST_TARGETS or seconds <= STEADY_S:
        return PRIOR_SAMPLES
    return PRIOR_SAMPLES * math.sqrt(STEADY_S / seconds)


def _first_samples(target: str) -> int:
    return _HOST_FIRST_SAMPLES if target in HOST_TARGETS else FIRST_SAMPLES


def call_kind(key: tuple, target: str) -> tuple:
    """What a target's one-time costs are paid for: an op on some dtypes and layout (a
    reduction's dimensions and axis), at any size. A product's output size is no part of it:
    BLAS libraries compile nothing per shape."""
    layout = key.layout if type(key) is CallKey else key[5] if len(key) > 5 else None  # (or a shorter tuple)
    if type(layout) is tuple and layout[:1] == ("product",):
        layout = None
    return (*key[:2], layout, target)


class History:
    """Measured durations, the exploration policy and hot-path detection."""

    def __init__(self, alpha: float = 0.3, sample_threshold_s: float = 100e-6, hot_calls_per_s: float = 10_000,
                 explore_probability: float = 0.1, explore_ratio: float = 3.0, explore_samples: int = 2,
                 explore_budget: float = 0.05, seed: int = 0) -> None:
        self.alpha = alpha
        self.sample_threshold_s = sample_threshold_s
        self.hot_calls_per_s = hot_calls_per_s
        self.explore_probability = explore_probability
        self.explore_ratio = explore_ratio
        self.explore_samples = explore_samples
        self.explore_budget = explore_budget
        self.stats: dict[tuple, dict[str, Stat]] = {}
        self.ran: set[tuple] = set()  # (op, dtypes, layout, target) measured at least once, at any size
        self.loaded: set[tuple] = set()  # the same, run on a device by this process: its kernel is loaded
        self._lock = allocate_lock()
        self._seed = seed
        self._rng: Any = None  # ``random.Random(seed)``, made (with the module) by the first exploration
        self._calls: dict[str, list[float]] = {}  # op -> [window start, calls in window]
        self.hot: set[str] = set()
        self.measured_s = 0.0  # time measured in all
        self.explored_s = 0.0  # time spent on exploration
        self._pending: list[tuple[Any, Any, float, tuple, str, bool]] = []
        self.spent: dict[tuple, float] = {}  # key -> seconds its timed calls took, on every target

    # ---- learning ------------------------------------------------------------------------------------

    def observe(self, key: tuple, target: str, seconds: float, explored: bool = False) -> None:
        """Learn one timed call. A device's first call of a kind in this process is no price: it
        loaded the kind's kernel, or compiled it (seconds, with CuPy's disk cache empty), and a
        price that held it would keep the kind off the device for good (a plan is not retried)."""
        with self._lock:
            kind = call_kind(key, target)
            if target not in HOST_TARGETS and kind not in self.loaded:
                self.loaded.add(kind)
                self.ran.add(kind)
                return
            per = self.stats.setdefault(key, {})
            self.ran.add(kind)
            stat = per.get(target)
            if stat is None:
                per[target] = Stat(seconds, 1)
            else:
                if stat.samples < _first_samples(target):
                    stat.seconds = min(stat.seconds, seconds)  # the slower ones paid a one-time cost
                else:  # an average of zero (a clock too coarse for the call) is not held there
                    capped = min(seconds, OUTLIER_RATIO * stat.seconds) if stat.seconds > 0 else seconds
                    stat.seconds += self.alpha * (capped - stat.seconds)
                stat.samples += 1
            self.measured_s += seconds
            self.spent[key] = self.spent.get(key, 0.0) + seconds
            if explored:
                self.explored_s += seconds

    def blended(self, key: tuple, target: str, model_s: float | None) -> tuple[float | None, int]:
        """The estimate for ``target``: the model's, pulled toward what was measured."""
        stat = self.stats.get(key, {}).get(target)
        if stat is None:
            return model_s, 0
        if model_s is None:
            return stat.seconds, stat.samples
        confidence = stat.samples / (stat.samples + _prior_samples(target, stat.seconds))
        return confidence * stat.seconds + (1 - confidence) * model_s, stat.samples

    def explore(self, key: tuple, ranked: list[tuple[float, str]]) -> str | None:
        """A plausible, little-measured alternative to try instead of the best, or ``None``.

        An exploration is paid from the time this kind of call has taken so far: an alternative
        priced over ``explore_budget`` of it waits (an exploration priced wrongly can cost a
        program many times the call it explores), as it does while all explorations took over
        that share of all the time measured.

        Only a host target or one that has run this kind of call (op, dtypes, layout) at some
        size is explored: a device's first such call pays a one-time cost (a kernel compiled, a
        module loaded) that a few explored calls cannot repay."""
        if len(ranked) < 2 or self.explored_s > self.explore_budget * self.measured_s:
            return None
        best = ranked[0][0]
        per = self.stats.get(key, {})
        spent = self.spent.get(key, 0.0)
        for seconds, name in ranked[1:]:
            if seconds > self.explore_ratio * best or seconds < self.sample_threshold_s:
                continue
            if seconds > self.explore_budget * spent:  # not yet paid for by this kind of call's own time
                continue
            if name not in HOST_TARGETS and call_kind(key, name) not in self.ran:
                continue
            if per.get(name, Stat(0, 0)).samples < self.explore_samples:
                if self._rng is None:
                    import random

                    self._rng = random.Random(self._seed)
                if self._rng.random() < self.explore_probability:
                    return name
        return None

    def retry(self, key: tuple, names: list[str], best_s: float | None = None) -> str | None:
        """A target among ``names`` measured fewer than its first samples' count for this key, to
        measure once more (each call so far may have paid a one-time cost and lost on it).
        Outside the exploration budget: it is at most a few calls per key and target, and the
        costly explorations of other kinds of call must not keep the fastest target from its
        next call (a GPU solver can lose its first call, paying its setup, and win every one
        after it). Not NumPy where its timing of over ``COLD_S`` lost to the best (``best_s``)
        by more than ``explore_ratio``: NumPy starts nothing at a first call (its BLAS threads
        start at its import; torch's start at its first call), so a second timing would not win
        and would cost the whole call again (a sine of 41M elements timed at 0.48 s on NumPy,
        against 0.04 s on CuPy)."""
        per = self.stats.get(key, {})
        for name in names:
            stat = per.get(name)
            if stat is None or stat.samples >= _first_samples(name):
                continue
            if (best_s is not None and name == "numpy" and stat.seconds > COLD_S
                    and stat.seconds > self.explore_ratio * best_s):
                continue
            return name
        return None

    # ---- hot paths -----------------------------------------------------------------------------------

    def count(self, op: str) -> bool:
        """Count one call of ``op``; ``True`` if it is hot (too frequent to time or trace)."""
        now = time.perf_counter()
        window = self._calls.get(op)
        if window is None:
            self._calls[op] = [now, 1]
            return op in self.hot
        window[1] += 1
        elapsed = now - window[0]
        if elapsed >= 1.0:
            rate = window[1] / elapsed
            if rate > self.hot_calls_per_s:
                self.hot.add(op)
            else:
                self.hot.discard(op)
            window[0], window[1] = now, 0
        elif window[1] > self.hot_calls_per_s:
            self.hot.add(op)
        return op in self.hot

    # ---- device timing ----------------------------------------------------------------------------------

    def pend(self, start: Any, end: Any, host_s: float, key: tuple, target: str,
             explored: bool) -> list[tuple[tuple, str]]:
        """Remember device events to read once the GPU has passed them (no sync now); returns
        the (key, target) of the timings that completed meanwhile (see ``poll``)."""
        with self._lock:
            self._pending.append((start, end, host_s, key, target, explored))
        return self.poll()

    def poll(self) -> list[tuple[tuple, str]]:
        """Fold in every pending device timing that has completed; returns their (key, target)."""
        with self._lock:
            pending, self._pending = self._pending, []
        keep, done = [], []
        for item in pending:
            start, end, host_s, key, target, explored = item
            if not _done(end):
                keep.append(item)
                continue
            device_s = _elapsed(start, end)
            self.observe(key, target, max(host_s, device_s), explored)
            done.append((key, target))
        if keep:
            with self._lock:
                self._pending[:0] = keep[-1000:]
        return done

    # ---- persistence ------------------------------------------------------------------------------------

    def to_json(self) -> str:
        rows = [
            {"key": _jsonable(key), "target": t, "seconds": s.seconds, "samples": s.samples}
            for key, per in self.stats.items()
            for t, s in per.items()
        ]
        return json.dumps({"version": HISTORY_VERSION, "stats": rows})

    def save(self, path: str | Path) -> None:
        """Write the history to ``path`` whole (``cachefiles.write_text``)."""
        cachefiles.write_text(path, self.to_json())

    def load(self, path: str | Path) -> None:
        """Add what a saved history measured (one saved by another version of dispatch is ignored:
        its keys would match no call). A damaged file raises ``ValueError`` (``OSError`` where it
        is no regular file) and adds nothing: every row is read before any is used."""
        self.load_data(cachefiles.read_json(path), str(path))

    def load_data(self, data: Any, path: str = "a saved history") -> None:
        """``load`` for a decoded JSON value (``to_json``'s, as ``dispatch.routing.learned`` keeps it)."""
        if not isinstance(data, dict):
            raise ValueError(f"{path}: not a saved history (a JSON {type(data).__name__})")
        if data.get("version") != HISTORY_VERSION:
            return
        try:
            stats = [(_key(r["key"]), _name(r["target"]), Stat(_number(r["seconds"]), int(r["samples"])))
                     for r in data.get("stats", [])]
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise ValueError(f"{path}: not a saved history ({type(exc).__name__}: {exc})") from None
        for key, target, stat in stats:
            self.stats.setdefault(key, {})[target] = stat
            self.ran.add(call_kind(key, target))


def _key(raw: object) -> tuple:
    key = _from_jsonable(raw)  # type: ignore[arg-type]
    hash(key)  # TypeError for a list where a key holds a number or a string
    return key


def _name(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a target named by {value!r}")
    return value


def _number(value: object) -> float:
    """``value`` as a finite float (``ValueError`` for anything else: a time, a credit)."""
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number


def _done(event: Any) -> bool:
    try:
        return bool(event.query())
    except Exception:  # a broken event: drop it rather than block
        return True


def _elapsed(start: Any, end: Any) -> float:
    try:
        ms = start.elapsed_time(end) if hasattr(start, "elapsed_time") else None
        if ms is None:
            import cupy

            ms = cupy.cuda.get_elapsed_time(start, end)
        return float(ms) / 1e3
    except Exception:
        return 0.0


def _jsonable(key: tuple) -> Any:
    op, dtypes, bucket, devices, *rest = key  # then the forced target and the layout, where the key has them
    return [op, [str(d) for d in dtypes], bucket, sorted(str(d) for d in devices), *rest]


def _from_jsonable(raw: list) -> tuple:
    import numpy as np


    op, dtypes, bucket, devices, *rest = raw
    key = (op, tuple(np.dtype(d) for d in dtypes), bucket, frozenset(parse_device(d) for d in devices),
           *(_tupled(r) for r in rest))  # JSON made the layout's tuples lists
    return CallKey(*key) if len(key) == len(CallKey._fields) else key


def _tupled(value: Any) -> Any:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value
