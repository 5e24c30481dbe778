"""NumPy's own test suite, run on stock NumPy and on ``import dispatch as np`` side by side.

The test modules the installed NumPy wheel ships (``numpy/<package>/tests``, with their data
files) are copied twice into a work folder; in the second copy the one line
``import numpy as np`` becomes ``import dispatch as np`` and nothing else changes. Each
module then runs in its own watched ``pytest`` process, stock first, and the two runs are
compared test by test: a *new failure* passed stock and does not pass under dispatch.

    python -m benchmarks.peer.numpy_suite                       # the whole suite
    python -m benchmarks.peer.numpy_suite linalg _core/tests/test_numeric.py -k where
    python -m benchmarks.peer.numpy_suite --json peer.json --timeout 300

New failures listed in ``xfail.toml`` (what a wrapper honestly cannot do) or in
``known_failures.toml`` (bugs still to fix) are reported as expected.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy

from benchmarks.peer.harness import (
    REPO,
    ModuleResult,
    add_common_arguments,
    conclude,
    crashers,
    dump,
    judge,
    load_expectations,
    run_pytest,
)

HERE = Path(__file__).resolve().parent
PACKAGES = ("_core", "lib", "linalg", "fft", "random", "ma", "polynomial")
NUMPY_ROOT = Path(numpy.__file__).resolve().parent
# Only this statement changes, wherever it stands alone on its line (also indented, in a function).
IMPORT = re.compile(r"^(?P<indent>[ \t]*)import numpy as np(?P<rest>[ \t]*(#.*)?)$", re.MULTILINE)
# NumPy's own pytest configuration (its repository's pytest.ini): warnings are errors.
PYTEST_INI = """\
[pytest]
addopts = -l -ra -p no:cacheprovider
doctest_optionflags = NORMALIZE_WHITESPACE ELLIPSIS ALLOW_UNICODE ALLOW_BYTES
filterwarnings =
    error
    ignore:Not importing directory
    ignore:numpy.dtype size changed
    ignore:numpy.ufunc size changed
    ignore::UserWarning:cpuinfo,
    ignore: divide by zero encountered in log
    ignore: invalid value encountered in log
    ignore:the matrix subclass is not
    ignore:Importing from numpy.matlib is
    ignore:assertions not in test modules or plugins:pytest.PytestConfigWarning
    ignore::pytest.PytestDeprecationWarning
"""


def rewrite(source: str) -> str:
    """``import numpy as np`` -> ``import dispatch as np``; every other byte as it was."""
    return IMPORT.sub(r"\g<indent>import dispatch as np\g<rest>", source)


def prepare(work: Path, packages=PACKAGES) -> dict[str, Path]:
    """The two copies, ``work/stock`` and ``work/dispatch``, each a pytest root with NumPy's conftest."""
    roots = {}
    for variant in ("stock", "dispatch"):
        root = roots[variant] = work / variant
        for pkg in packages:
            dest = root / pkg / "tests"
            if not dest.exists():
                shutil.copytree(NUMPY_ROOT / pkg / "tests", dest, ignore=shutil.ignore_patterns("__pycache__"))
                if variant == "dispatch":
                    for py in dest.rglob("*.py"):
                        text = py.read_text(encoding="utf-8")
                        if (new := rewrite(text)) != text:
                            py.write_text(new, encoding="utf-8")
        shutil.copy2(NUMPY_ROOT / "conftest.py", root / "conftest.py")
        (root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    return roots


def modules(selection: list[str]) -> list[str]:
    """Test modules (``_core/tests/test_numeric.py``) picked by package, path or ``pkg/test_x``."""
    every = sorted(str(p.relative_to(NUMPY_ROOT)) for pkg in PACKAGES
                   for p in (NUMPY_ROOT / pkg / "tests").glob("test_*.py"))
    if not selection:
        return every

    def picked(mod: str) -> bool:
        short = mod.replace("/tests/", "/")
        return any(s.rstrip("/") in (mod, short, short[:-3], mod.split("/")[0]) for s in selection)

    chosen = [m for m in every if picked(m)]
    if not chosen:
        raise SystemExit(f"no NumPy test module matches {selection}")
    return chosen


def child_env(work: Path, max_rss_mb: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISPATCH_", "PYTEST_"))}
    env.update(PYTHONPATH=str(REPO), DISPATCH_CACHE_DIR=str(work / "dispatch-cache"),
               # NumPy skips the tests that need more memory than this.
               NPY_AVAILABLE_MEM=f"{int(max_rss_mb * 0.6)} MB",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return env


def run(selection: list[str], *, keyword: str = "", timeout: float = 600, max_rss_mb: float = 4096,
        slow: bool = False, work: Path | None = None, progress=None, deselect: list[str] = ()) -> list[ModuleResult]:
    """Run the chosen modules stock and under dispatch; one ``ModuleResult`` each. ``deselect``:
    pytest arguments the dispatch run alone takes (``harness.crashers``)."""
    mods = modules(selection)
    work = Path(work or tempfile.mkdtemp(prefix="numpy-peer-"))
    roots = prepare(work, sorted({m.split("/")[0] for m in mods}))
    env = child_env(work, max_rss_mb)
    results = []
    for mod in mods:
        args = [mod, "-q", "--rootdir", ".", "-c", "pytest.ini"]
        if not slow:
            args += ["-m", "not slow"]
        if keyword:
            args += ["-k", keyword]
        runs = {}
        for variant, root in roots.items():
            tag = mod.replace("/", "_")
            chosen = args if variant == "stock" else [*args, *deselect]
            runs[variant] = run_pytest(chosen, cwd=root, env=env, record=work / f"{variant}-{tag}.jsonl",
                                       log=work / f"{variant}-{tag}.log", timeout=timeout, max_rss_mb=max_rss_mb)
        results.append(ModuleResult.compare(mod, runs["stock"], runs["dispatch"]))
        if progress:
            progress(results)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.peer.numpy_suite", description=__doc__.split("\n\n")[0])
    ap.add_argument("select", nargs="*", help=f"packages ({', '.join(PACKAGES)}) or modules; default: all")
    ap.add_argument("--slow", action="store_true", help="also the tests NumPy marks slow")
    add_common_arguments(ap)
    a = ap.parse_args(argv)
    expectations = load_expectations(HERE / "xfail.toml", HERE / "known_failures.toml")
    meta = {"numpy": numpy.__version__, "keyword": a.keyword, "slow": a.slow, "select": a.select}

    def progress(results):
        r = results[-1].row()
        print(f"[{len(results)}] {r['module']}: stock {r['stock_passed']} passed, dispatch {r['peer_passed']}, "
              f"new failures {r['new_failures']} ({r['status']}, {r['stock_s']}s / {r['peer_s']}s, "
              f"{r['stock_rss_mb']:.0f} / {r['peer_rss_mb']:.0f} MB)", file=sys.stderr, flush=True)
        if a.json:
            dump(a.json, results, judge(results, expectations), meta)

    with tempfile.TemporaryDirectory(prefix="peer-") as scratch:  # kept only when --work names it
        results = run(a.select, keyword=a.keyword, timeout=a.timeout, max_rss_mb=a.max_rss, slow=a.slow,
                      work=a.work or Path(scratch), progress=progress, deselect=crashers(expectations))
    return conclude(results, expectations, known=HERE / "known_failures.toml", record=a.record_known,
                    peer_name="dispatch", examples=a.examples)


if __name__ == "__main__":
    sys.exit(main())
