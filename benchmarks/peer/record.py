"""pytest plugin: append each test's outcome to the JSON-lines file ``$PEER_RECORD``.

One line per phase report, written as it happens, so a module killed for time or memory
still leaves the outcomes of the tests that finished.
"""

from __future__ import annotations

import json
import os
import re

_FILE = None
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Warning)(: |$)")


def _write(entry: dict) -> None:
    global _FILE
    if _FILE is None:
        _FILE = open(os.environ["PEER_RECORD"], "a", encoding="utf-8")  # kept open for the session
    _FILE.write(json.dumps(entry) + "\n")
    _FILE.flush()


def _message(report) -> str:
    """The exception's first line (``ValueError: ...``), or the skip reason."""
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    elif isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        text = str(longrepr[2])
    else:
        text = str(longrepr or "")
    lines = text.strip().splitlines() or [""]
    if "Traceback (most recent call last):" in text:
        # A test that re-raises with the inner traceback in its message (NumPy's linalg cases):
        # the inner exception is the cause.
        inner = [ln.strip() for ln in lines if _EXCEPTION_LINE.match(ln.strip())]
        if inner:
            return inner[-1][:240]
    first = lines[0].strip()
    rest = [ln.strip() for ln in lines[1:] if ln.strip()]
    if first.endswith(":") and rest:  # numpy.testing's "AssertionError: \nArrays are not equal"
        first = f"{first} {rest[0]}"
    return first[:240]


def pytest_runtest_logreport(report) -> None:
    # Under pytest-xdist each report reaches the controller too: written there once, not by the workers.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.passed and report.when != "call":
        return
    if report.failed:
        outcome = "failed"
    elif report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    else:
        outcome = "xpassed" if hasattr(report, "wasxfail") else "passed"
    _write({"id": report.nodeid, "when": report.when, "outcome": outcome, "seconds": round(report.duration, 3),
            "message": "" if outcome in ("passed", "xpassed") else _message(report)})


def pytest_addoption(parser) -> None:
    parser.addoption("--peer-deselect", action="append", default=[], metavar="NODEID",
                     help="leave out this test (exactly; a prefix where it ends in *), unlike --deselect, "
                          "which leaves out every test whose id begins so")


def pytest_collection_modifyitems(config, items) -> None:
    names = config.getoption("peer_deselect")
    if not names:
        return
    exact = {n for n in names if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))
    kept, left = [], []
    for item in items:
        (left if item.nodeid in exact or (prefixes and item.nodeid.startswith(prefixes)) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_collectreport(report) -> None:
    if report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):
        _write({"id": report.nodeid, "when": "collect", "outcome": "error", "message": _message(report)})


def pytest_unconfigure(config) -> None:
    if _FILE is not None:
        _FILE.close()
