"""Run one test module in a watched child process, and compare two runs of it.

Each module runs alone in its own ``pytest`` process, killed (with its children) when it
passes the time limit or the resident-memory cap: a peer suite must not take the machine
down, and one runaway module must not hide the others' results. Outcomes come from the
``record`` plugin, so a killed module still reports the tests it finished.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PASSED = frozenset({"passed", "xpassed"})
# A phase that failed decides the test's outcome; otherwise a skip in setup, else the call.
_NUMBER = re.compile(r"0x[0-9a-f]+|[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")
_RANK = {"error": 3, "failed": 3, "skipped": 2, "xfailed": 2, "xpassed": 1, "passed": 1}


@dataclass
class ModuleRun:
    """One pytest process: how it ended, and each test's ``(outcome, message)``."""

    status: str  # "ok", "timeout", "memory" or "crash"
    returncode: int | None
    seconds: float
    peak_rss_mb: float
    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)

    def count(self, outcomes: frozenset | set) -> int:
        return sum(o in outcomes for o, _ in self.outcomes.values())


def run_pytest(args: list[str], *, cwd: Path, env: dict[str, str], record: Path, log: Path,
               timeout: float, max_rss_mb: float) -> ModuleRun:
    """Run ``python -m pytest *args`` under the watcher; outcomes are read from ``record``."""
    record.unlink(missing_ok=True)
    env = {**env, "PEER_RECORD": str(record)}
    cmd = [sys.executable, "-m", "pytest", "-p", "benchmarks.peer.record", *args]
    with open(log, "w", encoding="utf-8") as out:
        returncode, status, peak, _, seconds = watched(cmd, cwd=cwd, env=env, stdout=out, timeout=timeout,
                                                       max_rss_mb=max_rss_mb, every=0.25)
    outcomes = read_record(record)
    if status == "ok" and returncode not in (0, 1, 5):
        status = "collect error" if any(o == "error" for o, _ in outcomes.values()) else "crash"
    return ModuleRun(status, returncode, round(seconds, 1), round(peak, 1), outcomes)


def watched(cmd: list[str], *, cwd: Path, env: dict[str, str], stdout: Any, timeout: float, max_rss_mb: float,
            every: float) -> tuple[int | None, str, float, float, float]:
    """Run ``cmd`` in its own session, killed (with its children) past ``timeout`` seconds or
    ``max_rss_mb`` of the process tree's memory, sampled every ``every`` seconds: (returncode,
    status, sampled peak MB of the tree, the process's own peak MB from its rusage, seconds)."""
    start, peak, status = time.monotonic(), 0.0, "ok"
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.STDOUT,
                            start_new_session=True)
    root = psutil.Process(proc.pid)
    while True:
        pid, code, usage = os.wait4(proc.pid, os.WNOHANG)  # reaped here: its own rusage, not the children's total
        if pid:
            returncode = os.waitstatus_to_exitcode(code)
            break
        peak = max(peak, _tree_rss_mb(root))
        if peak > max_rss_mb:
            status = "memory"
        elif time.monotonic() - start > timeout:
            status = "timeout"
        if status != "ok":
            os.killpg(proc.pid, signal.SIGKILL)
            _, code, usage = os.wait4(proc.pid, 0)
            returncode = os.waitstatus_to_exitcode(code)
            break
        time.sleep(every)
    proc.returncode = returncode  # reaped above: Popen must not wait for it again
    return returncode, status, peak, usage.ru_maxrss / 1024, time.monotonic() - start


def _tree_rss_mb(root: psutil.Process) -> float:
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def read_record(path: Path) -> dict[str, tuple[str, str]]:
    """Each test's final ``(outcome, message)`` from the record plugin's lines."""
    out: dict[str, tuple[str, str]] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            e = json.loads(line)
        except json.JSONDecodeError:  # the last line of a killed run may be cut
            continue
        old = out.get(e["id"])
        if old is None or _RANK[e["outcome"]] > _RANK[old[0]]:
            out[e["id"]] = (e["outcome"], e["message"])
    return out


# ---- expectations: the xfail table and the list of known failures -----------------------------


@dataclass
class Expectation:
    """Tests expected to fail under dispatch, for one reason.

    ``tests`` are node ids, or prefixes ending in ``*``; ``match``, if set, is a regular
    expression the failure's first line must contain.
    """

    reason: str
    tests: list[str]
    match: str = ""
    source: str = ""
    crashes: bool = False  # the tests kill the interpreter: the peer's run leaves them out (--peer-deselect)

    def covers(self, test_id: str, message: str | None = None) -> bool:
        hit = any(test_id == t or (t.endswith("*") and test_id.startswith(t[:-1])) for t in self.tests)
        return hit and (message is None or not self.match or re.search(self.match, message) is not None)


def crashers(expectations: list[Expectation]) -> list[str]:
    """Arguments that leave out the tests that kill the interpreter under the peer (one crash
    would lose every test after it in the module's process): these tests exactly, where pytest's
    ``--deselect`` would also take every test whose id begins with one's (``record.py``)."""
    return [arg for e in expectations if e.crashes for t in e.tests for arg in ("--peer-deselect", t)]


def load_expectations(*paths: Path) -> list[Expectation]:
    out = []
    for path in paths:
        if path.exists():
            for entry in tomllib.loads(path.read_text(encoding="utf-8")).get("expect", []):
                out.append(Expectation(entry["reason"], list(entry["tests"]), entry.get("match", ""), path.name,
                                       entry.get("crashes", False)))
    return out


# ---- comparison ---------------------------------------------------------------------------------


@dataclass
class ModuleResult:
    name: str
    stock: ModuleRun
    peer: ModuleRun
    new: dict[str, str] = field(default_factory=dict)  # test id -> why it fails under the peer
    fixed: list[str] = field(default_factory=list)  # failed stock, passed under the peer
    # passed stock, not reached under the peer before its process was killed for time or memory
    unrun: list[str] = field(default_factory=list)

    @classmethod
    def compare(cls, name: str, stock: ModuleRun, peer: ModuleRun) -> ModuleResult:
        res = cls(name, stock, peer)
        collect_errors = [m for o, m in peer.outcomes.values() if o == "error"]
        for tid, (outcome, _) in stock.outcomes.items():
            got = peer.outcomes.get(tid)
            if got is None and "numpy." in tid.partition("[")[2]:
                got = peer.outcomes.get(peer_id(tid))
            if outcome in PASSED and got is None and peer.status in ("timeout", "memory") and not collect_errors:
                res.unrun.append(tid)
            elif outcome in PASSED and (got is None or got[0] not in PASSED):
                if got is None:
                    why = (f"not run: collection error: {collect_errors[0]}" if collect_errors
                           else f"not run ({peer.status})")
                elif got[0] == "failed":
                    why = got[1]
                else:
                    why = f"{got[0]}: {got[1]}"
                res.new[tid] = why
            elif outcome == "failed" and got is not None and got[0] in PASSED:
                res.fixed.append(tid)
        return res

    def row(self) -> dict:
        return {"module": self.name,
                "stock_passed": self.stock.count(PASSED), "stock_failed": self.stock.count({"failed", "error"}),
                "peer_passed": self.peer.count(PASSED), "peer_failed": self.peer.count({"failed", "error"}),
                "new_failures": len(self.new), "not_run": len(self.unrun),
                "status": self.stock.status if self.stock.status != "ok" else self.peer.status,
                "stock_s": self.stock.seconds, "peer_s": self.peer.seconds,
                "stock_rss_mb": self.stock.peak_rss_mb, "peer_rss_mb": self.peer.peak_rss_mb}


def peer_id(test_id: str) -> str:
    """The peer run's id of a stock test: pytest names a parameter that is a module by its
    ``__name__``, so ``[numpy.random]`` stock is ``[dispatch.random]`` under ``import dispatch as np``."""
    node, bracket, params = test_id.partition("[")
    return node + bracket + re.sub(r"(^|-)numpy\.", r"\1dispatch.", params)


@dataclass
class Verdict:
    """New failures split by the expectations; ``stale``: expected failures that now pass."""

    unexpected: dict[str, str]
    expected: dict[str, tuple[str, Expectation]]
    stale: list[tuple[str, Expectation]]


def judge(results: list[ModuleResult], expectations: list[Expectation]) -> Verdict:
    unexpected, expected, stale = {}, {}, []
    for res in results:
        for tid, why in res.new.items():
            exp = next((e for e in expectations if e.covers(tid, why)), None)
            if exp is None:
                unexpected[tid] = why
            else:
                expected[tid] = (why, exp)
        for tid, (outcome, _) in res.peer.outcomes.items():
            # Only a test an entry names exactly is expected to fail; a prefix ("...::*") with a
            # ``match`` is a rule for a kind of failure and may cover tests that pass.
            if outcome in PASSED:
                exp = next((e for e in expectations if tid in e.tests), None)
                if exp is not None:
                    stale.append((tid, exp))
    return Verdict(unexpected, expected, stale)


def causes(failures: dict[str, str]) -> list[tuple[str, list[str]]]:
    """Failures grouped by first line, most frequent first. Numbers are blanked and the line cut,
    so one cause (``assert array([...]) == ...`` with other values) stays one group."""
    groups: dict[str, list[str]] = defaultdict(list)
    for tid, why in failures.items():
        groups[_NUMBER.sub("#", why)[:110]].append(tid)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def report(results: list[ModuleResult], verdict: Verdict, *, peer_name: str, examples: int = 3) -> str:
    """The per-module table, the total, and the new failures grouped by cause."""
    lines = []
    head = (f"{'module':<52} {'stock pass':>10} {'fail':>5} {peer_name + ' pass':>13} {'fail':>5} {'new':>5}"
            f" {'unrun':>5}  status")
    lines += [head, "-" * len(head)]
    tot = Counter()
    for res in results:
        r = res.row()
        for k in ("stock_passed", "stock_failed", "peer_passed", "peer_failed", "new_failures", "not_run"):
            tot[k] += r[k]
        lines.append(f"{r['module']:<52} {r['stock_passed']:>10} {r['stock_failed']:>5} {r['peer_passed']:>13} "
                     f"{r['peer_failed']:>5} {r['new_failures']:>5} {r['not_run']:>5}  {r['status']}")
    pct = 100 * tot["new_failures"] / max(tot["stock_passed"], 1)
    lines += ["-" * len(head),
              f"{'total':<52} {tot['stock_passed']:>10} {tot['stock_failed']:>5} {tot['peer_passed']:>13} "
              f"{tot['peer_failed']:>5} {tot['new_failures']:>5} {tot['not_run']:>5}  ({pct:.2f}% of stock's passes)",
              ""]
    if tot["not_run"]:
        lines.append(f"{tot['not_run']} tests that pass stock were not reached under {peer_name} (module killed "
                     "for time or memory): not counted as new failures.")
    fixed = sum(len(r.fixed) for r in results)
    if fixed:
        lines.append(f"{fixed} tests fail stock and pass under {peer_name}.")
    lines.append(f"New failures (pass stock, fail under {peer_name}): {len(verdict.unexpected)} unexpected, "
                 f"{len(verdict.expected)} expected (xfail table or known failures).")
    for why, ids in causes(verdict.unexpected):
        lines.append(f"  {len(ids):>5}  {why}")
        lines += [f"           {tid}" for tid in ids[:examples]]
        if len(ids) > examples:
            lines.append(f"           ... and {len(ids) - examples} more")
    by_reason = Counter(exp.reason for _, exp in verdict.expected.values())
    if by_reason:
        lines.append("Expected:")
        lines += [f"  {n:>5}  {reason}" for reason, n in by_reason.most_common()]
    if verdict.stale:
        lines.append(f"Expected to fail but passed ({len(verdict.stale)}): remove them from the table.")
        lines += [f"           {tid}  [{exp.source}]" for tid, exp in verdict.stale]
    return "\n".join(lines)


def dump(path: Path, results: list[ModuleResult], verdict: Verdict, meta: dict) -> None:
    """Everything, for later reading: per module the counts, each new failure and its cause."""
    data = {"meta": meta,
            "modules": [{**r.row(), "new": r.new, "fixed": r.fixed} for r in results],
            "unexpected": verdict.unexpected,
            "expected": {t: {"why": w, "reason": e.reason} for t, (w, e) in verdict.expected.items()},
            "stale": [t for t, _ in verdict.stale],
            "causes": [{"cause": c, "count": len(ids), "tests": ids}
                       for c, ids in causes({**verdict.unexpected,
                                             **{t: w for t, (w, _) in verdict.expected.items()}})]}
    path.write_text(json.dumps(data, indent=1, default=lambda o: asdict(o)), encoding="utf-8")


def record_known(path: Path, failures: dict[str, str]) -> None:
    """Append ``failures`` to the known-failures table, one entry per cause (reviewed by hand after)."""
    chunks = []
    for _, ids in causes(failures):
        tests = "".join(f"    {json.dumps(t, ensure_ascii=False)},\n" for t in sorted(ids))
        reason = json.dumps(failures[ids[0]], ensure_ascii=False)  # one actual message, numbers and all
        chunks.append(f"[[expect]]\nreason = {reason}\ntests = [\n{tests}]\n")
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n" + "\n".join(chunks))


def conclude(results: list[ModuleResult], expectations: list[Expectation], *, known: Path, record: bool,
             peer_name: str, examples: int) -> int:
    """Judge a run, append its unexpected failures to ``known`` if asked, print the report, and
    return the exit status: 1 where a failure was unexpected or an expectation stale."""
    verdict = judge(results, expectations)
    if record and verdict.unexpected:
        record_known(known, verdict.unexpected)
    print(report(results, verdict, peer_name=peer_name, examples=examples))
    return 1 if verdict.unexpected or verdict.stale else 0


def add_common_arguments(ap: Any) -> None:
    """The options both suites take, after their own: the slice, bounds, outputs and the tables."""
    ap.add_argument("-k", dest="keyword", default="", help="pytest -k expression, passed to both runs")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per module and run (default 600)")
    ap.add_argument("--max-rss", type=float, default=4096, help="MB a module's process may hold (default 4096)")
    ap.add_argument("--json", type=Path, help="write every count and failure here (updated after each module)")
    ap.add_argument("--work", type=Path, help="work folder, kept (default: a temporary one, removed)")
    ap.add_argument("--examples", type=int, default=3, help="test ids shown per cause")
    ap.add_argument("--record-known", action="store_true",
                    help="append this run's unexpected new failures to known_failures.toml")
