"""Programs drawn at random (``random_programs``) routed between NumPy and torch's CPU engine, as
the default CPU-only install routes, under a calibration where torch-cpu wins large calls:
results equal NumPy's within the tolerance of another summation order."""

from __future__ import annotations

import pytest
import random_programs
from _synthetic import synthetic
from helpers import router_restored

import dispatch
from dispatch.routing import router
from dispatch.routing.history import History

pytest.importorskip("torch")

N = 1 << 18


@pytest.fixture(autouse=True)
def host_calibrated(tmp_path, monkeypatch):
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    dispatch.arrays._call.routing()  # the call path bound to the routing, as a first routed call binds it
    with router_restored(History(explore_probability=0.0)):
        router.use_calibration(synthetic(gpu=False, torch_cpu=True))
        yield


@pytest.mark.parametrize("learning", [False, True], ids=["priced", "learning"])
@pytest.mark.parametrize("seed", range(24))
def test_random_programs_on_the_host_targets_equal_numpy(seed, learning, monkeypatch):
    random_programs.equal_to_numpy(lambda seed, program: random_programs.vectors(seed, program, N, "torch-cpu"),
                                   seed, learning, monkeypatch, 1e-9, 1e-12)


@pytest.mark.parametrize("learning", [False, True], ids=["priced", "learning"])
@pytest.mark.parametrize("seed", range(16))
def test_random_matrix_programs_on_the_host_targets_equal_numpy(seed, learning, monkeypatch):
    random_programs.equal_to_numpy(lambda seed, program: random_programs.matrices(seed, program, 512, "torch-cpu"),
                                   seed, learning, monkeypatch, 1e-9, 1e-12)
