"""NumPy's and scikit-learn's own tests, a slice of each: no new failure beyond the tables.

The slices run through ``benchmarks/peer`` (the whole suites: ``python -m
benchmarks.peer.numpy_suite`` and ``python -m benchmarks.peer.sklearn_suite``), each module in
its own watched process, stock and under dispatch. A test that passes stock and fails under
dispatch fails here unless ``benchmarks/peer/xfail.toml`` (what a wrapper cannot do) or
``benchmarks/peer/known_failures.toml`` (bugs still to fix, shrinking as they are fixed) lists
it. An xfail entry that passes fails here too; a known failure that passes is only reported.
Deselect with ``-m "not peer"``.
"""

from __future__ import annotations

import warnings

import pytest

from benchmarks.peer import numpy_suite, sklearn_suite
from benchmarks.peer.harness import PASSED, judge, load_expectations, report

pytestmark = pytest.mark.peer

TABLES = (numpy_suite.HERE / "xfail.toml", numpy_suite.HERE / "known_failures.toml")
# Modules (and a -k slice of each) testing public functions' values: about two minutes here.
NUMPY_SLICE = {
    "_core/tests/test_shape_base.py": "",
    "lib/tests/test_arraysetops.py": "",
    "lib/tests/test_twodim_base.py": "",
    "fft/tests/test_pocketfft.py": "TestFFT1D",
    "linalg/tests/test_linalg.py": "TestSolve or TestInv or TestDet or TestNorm or TestQR",
}
SKLEARN_SLICE = ("tests/test_discriminant_analysis.py",)


def _check(results, peer_name: str) -> None:
    for res in results:  # the harness itself must have run the module
        assert res.stock.status == "ok" and res.stock.count(PASSED), f"{res.name}: stock run {res.stock.status}"
    verdict = judge(results, load_expectations(*TABLES))
    stale_xfail = [tid for tid, exp in verdict.stale if exp.source == "xfail.toml"]
    fixed = [tid for tid, exp in verdict.stale if exp.source == "known_failures.toml"]
    if fixed:
        warnings.warn(f"{len(fixed)} known failures now pass; remove them from known_failures.toml: {fixed[:5]}",
                      stacklevel=1)
    text = report(results, verdict, peer_name=peer_name)
    assert not verdict.unexpected, "new failures:\n" + text
    assert not stale_xfail, "xfail entries that pass:\n" + text


def test_numpy_suite_slice(tmp_path):
    results = [res for module, keyword in NUMPY_SLICE.items()
               for res in numpy_suite.run([module], keyword=keyword, timeout=300, max_rss_mb=3072,
                                          work=tmp_path / module.replace("/", "_"))]
    _check(results, "dispatch")


def test_sklearn_suite_slice(tmp_path):
    results = sklearn_suite.run(list(SKLEARN_SLICE), timeout=300, max_rss_mb=3072, work=tmp_path)
    _check(results, "accel")
