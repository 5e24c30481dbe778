"""Profiles recorded at run time, and their merge into the static call sites.

A profile (version 1) is what the run-time recorder writes::

    {"version": 1,
     "machine": {...},
     "calls": [{"site": "path/to/file.py:12", "op": "linalg.svd", "shapes": [[1000, 1000]],
                "dtypes": ["float64"], "count": 3, "target": "numpy", "seconds": 0.12,
                "estimates": {"numpy": 0.12, "torch-cpu": 0.1, "cupy": 0.01}}]}

``seconds`` and ``estimates`` are **totals over the entry's ``count`` calls** (what
``dispatch run --profile`` writes; the merge compares and sums them). ``estimates`` are
model estimates of the same calls on each target (this machine's calibration, or the seed
roofline where it is not calibrated: ``machine.estimates`` says which). ``shapes``,
``dtypes``, ``estimates`` and ``machine`` may be absent; other top-level fields
(``units``, ``script``, ``argv``, ``exit_code``, ``unattributed``...) are informative.

With a calibration of another machine (``analyze --hardware CAL.json``), each call is also
priced there from its shapes and dtypes (``hardware``: that machine's estimates, totals over
the calls as above, its cheapest target, and the speedup over NumPy on that machine).

Merge: a call joins the static site at the same (resolved file, line). A site path is resolved
against the working directory, then against the profile's folder, then matched by its trailing
path components when exactly one scanned file ends that way. Where several sites share a line,
the one with the call's op wins; a call no site takes is listed on its own. Several calls of
one site (other shapes or dtypes, or other ops on its line) are combined: counts and seconds
are summed, and so are the estimates of the targets all the priced calls have (a call without
estimates adds none: indexing, creation from a shape, ops outside the catalog). Notebook
lines count inside a cell, which a file:line site cannot name, so notebook calls are listed
on their own.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

__all__ = ["Profile", "ProfileCall", "ProfileError", "load_profile", "match_calls", "priced_on"]

PROFILE_VERSION = 1


class ProfileError(ValueError):
    """A profile that cannot be read; the message names the file and the field."""


@dataclass(frozen=True)
class ProfileCall:
    """One recorded call site (or several, combined)."""

    site: str
    op: str
    count: int
    target: str
    seconds: float
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    estimates: dict[str, float] = field(default_factory=dict)
    # estimates on another machine (analyze --hardware), totals over ``count`` calls
    hardware: dict[str, float] | None = None

    @property
    def path(self) -> str:
        return self.site.rpartition(":")[0]

    @property
    def line(self) -> int:
        return int(self.site.rpartition(":")[2])

    @property
    def size(self) -> int | None:
        """The elements of the largest input the call was recorded with (the size the static
        scan could not see); ``None`` without shapes."""
        return max((math.prod(shape) for shape in self.shapes), default=None)

    @property
    def recommended_target(self) -> str:
        """The target with the cheapest estimate (what it ran on wins a tie); without
        estimates, what it ran on."""
        if not self.estimates:
            return self.target
        best = min(self.estimates.values())
        return self.target if self.estimates.get(self.target) == best else min(self.estimates, key=self.estimates.get)

    @property
    def speedup(self) -> float | None:
        """Estimated time on what it ran on over the estimate on the recommended target (the
        measured time stands in where the run target has no estimate)."""
        if not self.estimates:
            return None
        baseline = self.estimates.get(self.target, self.seconds)
        best = self.estimates[self.recommended_target]
        return baseline / best if best > 0 else None

    @property
    def hardware_target(self) -> str | None:
        """The cheapest target on the other machine (``None`` without its estimates)."""
        return min(self.hardware, key=self.hardware.get) if self.hardware else None

    @property
    def hardware_speedup(self) -> float | None:
        """NumPy's estimate on the other machine over its cheapest target's (``None`` where
        that machine's calibration has no NumPy or the call could not be priced)."""
        if not self.hardware or "numpy" not in self.hardware:
            return None
        best = self.hardware[self.hardware_target]
        return self.hardware["numpy"] / best if best > 0 else None

    def to_json(self) -> dict:
        hardware = None
        if self.hardware is not None:
            hardware = {
                "estimates": dict(self.hardware),
                "recommended_target": self.hardware_target,
                "speedup": self.hardware_speedup,
            }
        return {
            "site": self.site,
            "op": self.op,
            "count": self.count,
            "shapes": [list(s) for s in self.shapes],
            "dtypes": list(self.dtypes),
            "target": self.target,
            "seconds": self.seconds,
            "estimates": dict(self.estimates),
            "recommended_target": self.recommended_target,
            "speedup": self.speedup,
            "hardware": hardware,
        }


@dataclass(frozen=True)
class Profile:
    path: str
    machine: dict
    calls: tuple[ProfileCall, ...]


def load_profile(path: str) -> Profile:
    """Read and check a version-1 profile; ``ProfileError`` says what is wrong, in one line."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise ProfileError(f"cannot read profile {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ProfileError(f"profile {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"profile {path}: expected a JSON object")
    if data.get("version") != PROFILE_VERSION:
        raise ProfileError(f"profile {path} has version {data.get('version')!r}; this dispatch reads version 1")
    machine = data.get("machine", {})
    calls = data.get("calls")
    if not isinstance(machine, dict) or not isinstance(calls, list):
        raise ProfileError(f"profile {path}: 'machine' must be an object and 'calls' a list")
    return Profile(path, machine, tuple(_call(path, i, c) for i, c in enumerate(calls)))


def _call(path: str, index: int, raw: object) -> ProfileCall:
    where = f"profile {path}: calls[{index}]"
    if not isinstance(raw, dict):
        raise ProfileError(f"{where} is not an object")

    def need(key: str, types: type | tuple[type, ...]):
        value = raw.get(key)
        if not isinstance(value, types) or isinstance(value, bool):
            raise ProfileError(f"{where} needs '{key}' ({_type_names(types)})")
        return value

    site, op, target = need("site", str), need("op", str), need("target", str)
    count, seconds = need("count", int), float(need("seconds", (int, float)))
    head, _, line = site.rpartition(":")
    if not head or not line.isdigit():
        raise ProfileError(f"{where} has site {site!r}; expected 'path:line'")
    try:
        shapes = tuple(tuple(int(d) for d in shape) for shape in raw.get("shapes", []))
        dtypes = tuple(str(d) for d in raw.get("dtypes", []))
        estimates = {str(k): float(v) for k, v in raw.get("estimates", {}).items()}
    except (TypeError, ValueError, AttributeError):
        raise ProfileError(f"{where}: 'shapes', 'dtypes' or 'estimates' is malformed") from None
    return ProfileCall(site, op, count, target, seconds, shapes, dtypes, estimates)


def _type_names(types: type | tuple[type, ...]) -> str:
    names = {"str": "a string", "int": "an integer", "float": "a number"}
    types = types if isinstance(types, tuple) else (types,)
    return names[types[-1].__name__]


def combine(calls: Sequence[ProfileCall]) -> ProfileCall:
    """Several recorded calls of one site as one."""
    if len(calls) == 1:
        return calls[0]
    # estimates: summed over the calls that have any (indexing, creation without an input
    # array and ops outside the catalog have none), on the targets all of those have
    priced = [c for c in calls if c.estimates]
    shared = set.intersection(*(set(c.estimates) for c in priced)) if priced else set()
    hardware = None
    if all(c.hardware is not None for c in calls):
        there_priced = [c.hardware for c in calls if c.hardware]
        there = set.intersection(*(set(h) for h in there_priced)) if there_priced else set()
        hardware = {t: sum(h[t] for h in there_priced) for t in sorted(there)}
    return ProfileCall(
        site=calls[0].site,
        op=calls[0].op,
        count=sum(c.count for c in calls),
        target=max(calls, key=lambda c: c.seconds).target,
        seconds=sum(c.seconds for c in calls),
        shapes=tuple(dict.fromkeys(s for c in calls for s in c.shapes)),
        dtypes=tuple(dict.fromkeys(d for c in calls for d in c.dtypes)),
        estimates={t: sum(c.estimates[t] for c in priced) for t in sorted(shared)},
        hardware=hardware,
    )


def priced_on(profile: Profile, price: Callable[[ProfileCall], dict[str, float]]) -> Profile:
    """The profile with each call priced on another machine: ``price(call)`` gives seconds
    per call by target (``{}``: cannot be priced), scaled here to the call's count."""
    calls = tuple(replace(c, hardware={t: s * c.count for t, s in price(c).items()}) for c in profile.calls)
    return replace(profile, calls=calls)


@dataclass(frozen=True)
class SiteKey:
    """What a static site offers the merge: its file as scanned, line and op."""

    path: str
    line: int
    op: str | None


def match_calls(sites: Sequence[SiteKey], profile: Profile) -> tuple[dict[int, ProfileCall], list[ProfileCall]]:
    """Which profile calls belong to which site (by index into ``sites``), and the calls no
    site takes."""
    by_file: dict[str, list[int]] = {}
    for index, site in enumerate(sites):
        if not site.path.endswith(".ipynb"):
            by_file.setdefault(os.path.realpath(site.path), []).append(index)
    base = os.path.dirname(os.path.abspath(profile.path))
    grouped: dict[int, list[ProfileCall]] = {}
    unmatched: list[ProfileCall] = []
    for call in profile.calls:
        file = _resolve(call.path, base, by_file)
        index = _pick(sites, by_file.get(file, []) if file else [], call)
        if index is None:
            unmatched.append(call)
        else:
            grouped.setdefault(index, []).append(call)
    return {index: combine(calls) for index, calls in grouped.items()}, unmatched


def _resolve(path: str, base: str, files: dict[str, list[int]]) -> str | None:
    for candidate in (path, os.path.join(base, path)):
        real = os.path.realpath(candidate)
        if real in files:
            return real
    parts = [p for p in os.path.normpath(path).split(os.sep) if p not in ("", ".", "..")]
    suffix = os.sep + os.sep.join(parts)
    found = [f for f in files if f.endswith(suffix)]
    return found[0] if len(found) == 1 else None


def _pick(sites: Sequence[SiteKey], indices: list[int], call: ProfileCall) -> int | None:
    on_line = [i for i in indices if sites[i].line == call.line]
    same_op = [i for i in on_line if sites[i].op == call.op]
    if same_op:
        return same_op[0]
    return on_line[0] if len(on_line) == 1 else None
