"""The peer suites' harness: a module split over pytest-xdist workers is recorded once per test,
and scikit-learn's stock outcomes can come from another machine's run."""

from __future__ import annotations

import json
import os
import sys

import pytest

from benchmarks.peer import harness, sklearn_suite


def test_workers_per_module_and_a_default():
    workers = sklearn_suite.parse_workers("test_ridge.py=5,cluster/tests/test_k_means.py=4,2")
    assert sklearn_suite.workers_for("linear_model/tests/test_ridge.py", workers) == 5
    assert sklearn_suite.workers_for("cluster/tests/test_k_means.py", workers) == 4
    assert sklearn_suite.workers_for("decomposition/tests/test_pca.py", workers) == 2
    assert sklearn_suite.workers_for("decomposition/tests/test_pca.py", sklearn_suite.parse_workers("")) == 1
    for bad in ("test_ridge.py=0", "two", "test_ridge.py=x"):
        with pytest.raises(ValueError, match="--workers"):
            sklearn_suite.parse_workers(bad)


_MODULE = """
import pytest

@pytest.mark.parametrize("i", range(6))
def test_passes(i):
    assert i >= 0

def test_fails():
    assert 1 == 2
"""


def test_a_module_split_over_workers_is_recorded_once_per_test(tmp_path):
    pytest.importorskip("xdist")
    (tmp_path / "test_sample.py").write_text(_MODULE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DISPATCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(harness.REPO), *filter(None, [env.get("PYTHONPATH")])])
    ran = harness.run_pytest([str(tmp_path / "test_sample.py"), "-q", "-p", "no:cacheprovider", "-n", "2"],
                             cwd=tmp_path, env=env, record=tmp_path / "r.jsonl", log=tmp_path / "r.log",
                             timeout=120, max_rss_mb=2048)
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ran.status == "ok", (tmp_path / "r.log").read_text(encoding="utf-8")
    assert "bringing up nodes" in (tmp_path / "r.log").read_text(encoding="utf-8")  # xdist ran it
    assert len(lines) == 7 and len({e["id"] for e in lines}) == 7  # once each, not once per process
    assert ran.count(harness.PASSED) == 6 and ran.count({"failed"}) == 1


def test_stock_outcomes_from_another_machine_and_only_device_tests_run_stock(tmp_path):
    """With ``stock_from``, the stock run here selects only the device tests (none on a machine
    without CuPy, CUDA or MPS), and the stock outcomes are the earlier run's records."""
    module = "covariance/tests/test_covariance.py"
    test_id = "sklearn/covariance/tests/test_covariance.py::test_ledoit_wolf_small"
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / f"stock-{module.replace('/', '_')}.jsonl").write_text(
        json.dumps({"id": test_id, "when": "call", "outcome": "passed", "seconds": 0.1, "message": ""}) + "\n",
        encoding="utf-8")
    found = sklearn_suite.run_backends([module], keyword="test_ledoit_wolf_small", backends=["numpy"],
                                       timeout=300, max_rss_mb=3072, work=tmp_path / "work", stock_from=earlier)
    (res,) = found["numpy"]
    assert res.stock.outcomes == {test_id: ("passed", "")}
    assert res.peer.outcomes[test_id][0] == "passed" and not res.new
    stock_log = (tmp_path / "work" / f"stock-{module.replace('/', '_')}.log").read_text(encoding="utf-8")
    assert "deselected" in stock_log or "no tests ran" in stock_log, stock_log


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_a_module_parameter_is_the_same_test_under_its_peer_name():
    """pytest names a parameter that is a module by its ``__name__``: ``[numpy.random]`` stock is
    ``[dispatch.random]`` under ``import dispatch as np``, the same test, compared as one."""
    tid = "random/tests/test_random.py::TestRandomDist::test_shuffle_no_object_unpacking[False-numpy.random]"
    assert harness.peer_id(tid) == tid.replace("numpy.random", "dispatch.random")
    assert harness.peer_id("a.py::t[numpy.fft-x]") == "a.py::t[dispatch.fft-x]"
    assert harness.peer_id("a.py::t[mynumpy.x]") == "a.py::t[mynumpy.x]"
    assert harness.peer_id("numpy.py::t") == "numpy.py::t"
    stock = harness.ModuleRun("ok", 0, 1.0, 1.0, {tid: ("passed", ""), "a.py::u": ("passed", "")})
    peer = harness.ModuleRun("ok", 0, 1.0, 1.0, {harness.peer_id(tid): ("passed", ""), "a.py::u": ("failed", "E")})
    assert harness.ModuleResult.compare("m", stock, peer).new == {"a.py::u": "E"}


def test_a_crashing_test_is_left_out_alone(tmp_path):
    """A crasher's id leaves out that test exactly, not the tests whose ids begin with it
    (``test_extension_incref_elide`` is no reason to leave out ``..._stack``)."""
    (tmp_path / "test_sample.py").write_text("def test_a():\n    pass\n\ndef test_a_stack():\n    pass\n\n"
                                             "def test_b1():\n    pass\n\ndef test_b2():\n    pass\n", encoding="utf-8")
    crashes = [harness.Expectation("crashes", ["test_sample.py::test_a", "test_sample.py::test_b*"], crashes=True)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DISPATCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(harness.REPO), *filter(None, [env.get("PYTHONPATH")])])
    ran = harness.run_pytest(["test_sample.py", "-q", "-p", "no:cacheprovider", *harness.crashers(crashes)],
                             cwd=tmp_path, env=env, record=tmp_path / "r.jsonl", log=tmp_path / "r.log",
                             timeout=120, max_rss_mb=2048)
    assert sorted(ran.outcomes) == ["test_sample.py::test_a_stack"], (tmp_path / "r.log").read_text(encoding="utf-8")
