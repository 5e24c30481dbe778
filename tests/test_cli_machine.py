"""``dispatch info`` and ``dispatch calibrate``: the machine, its targets and why the others
are missing, calibration state and routing policy; measuring, the tables, --out, --show,
--json, --only keeping the stored targets, and one-line errors.

Commands that route (or load a calibration into the router) run in a fresh interpreter, so
that the router of this test process is not changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _synthetic import synthetic

from dispatch import targets
from dispatch.cli import main
from dispatch.routing import calibration

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty calibration cache, here and in the commands started from here."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(folder))
    monkeypatch.chdir(tmp_path)
    calibration._loaded.clear()
    yield folder
    calibration._loaded.clear()


def dispatch_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "dispatch", *args], capture_output=True, text=True, env=env)


def stored_path(folder: Path) -> Path:
    return folder / f"calibration-{calibration.fingerprint()}.json"


# ---- info -------------------------------------------------------------------------------------------------


def test_info_uncalibrated(cache):
    done = dispatch_cli("info")
    assert (done.returncode, done.stderr) == (0, "")
    out = done.stdout
    assert out.startswith("CPU:          ")
    for name in targets.names():
        assert f"\n  {name} " in out
    assert "  numpy       available    SCALAR on cpu\n" in out
    for name, reason in targets.unavailable().items():
        assert f"  {name:<10}  unavailable  {reason}\n" in out
    assert f"none stored for this machine (would be {stored_path(cache)})" in out
    assert "routing:      policy seed\n" in out and "Not calibrated: routing uses the seed's MoE table" in out
    assert "\nprocess tuning:\n  OMP_WAIT_POLICY " in out

    info = json.loads(dispatch_cli("info", "--json").stdout)
    assert set(info) == {"version", "machine", "gpus", "targets", "calibration", "routing", "fast_path", "tuning",
                         "learned"}
    assert info["learned"]["script"] is None and info["learned"]["folder"].startswith(str(cache))
    assert {"OMP_WAIT_POLICY", "THP_MEM_ALLOC_ENABLE", "glibc heap thresholds"} <= set(info["tuning"])
    assert set(info["machine"]["libraries"]) == {"numpy", "torch", "cupy", "scikit-learn"}
    assert info["machine"]["libraries"]["numpy"] == __import__("numpy").__version__
    assert info["targets"]["numpy"] == {"available": True, "device": "cpu", "tier": "SCALAR"}
    for name, reason in targets.unavailable().items():
        assert info["targets"][name] == {"available": False, "reason": reason}
    assert info["calibration"]["stored"] is False and info["calibration"]["path"] == str(stored_path(cache))
    assert info["routing"]["policy"] == "seed" and info["routing"]["note"].startswith("Not calibrated")


def test_info_calibrated_and_a_stale_calibration(cache):
    synthetic().save(stored_path(cache))
    synthetic(fingerprint="0123456789abcdef").save(cache / "calibration-0123456789abcdef.json")
    info = json.loads(dispatch_cli("info", "--json").stdout)
    assert info["calibration"] | {"others": None} == {
        "path": str(stored_path(cache)),
        "fingerprint": calibration.fingerprint(),
        "stored": True,
        "outdated": False,
        "created": "2026-11-22T00:00:00+00:00",
        "quick": False,
        "seconds": 1.0,
        "targets": ["numpy", "torch-cpu"],
        "others": None,
    }
    assert info["calibration"]["others"] == [str(cache / "calibration-0123456789abcdef.json")]
    assert info["routing"] == {
        "policy": "cost",
        "forced": None,
        "note": "routing by this machine's calibration (cost model, corrected by measured calls)",
    }
    text = dispatch_cli("info").stdout
    assert "measured 2026-11-22T00:00:00+00:00 (full, 1.0 s): numpy, torch-cpu" in text
    assert "1 other calibration file(s) in the cache" in text and "policy cost" in text


def test_info_names_a_calibration_an_older_dispatch_stored_and_does_not_use_it(cache):
    older = synthetic()
    older.plan = ""  # made before calibrations recorded what they measured
    older.save(stored_path(cache))
    info = json.loads(dispatch_cli("info", "--json").stdout)
    assert info["calibration"]["stored"] is False and info["calibration"]["outdated"] is True
    assert info["routing"]["policy"] == "seed"
    text = dispatch_cli("info").stdout
    assert f"{stored_path(cache)}: not used, made by a version of dispatch that measured other things" in text


# ---- calibrate ----------------------------------------------------------------------------------------


def test_calibrate_quick_only_numpy_keeps_the_other_stored_targets(cache, tmp_path, capsys):
    synthetic().save(stored_path(cache))
    out = tmp_path / "here.json"
    done = dispatch_cli("calibrate", "--quick", "--only", "numpy", "--out", str(out))
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines()  # a busy machine is named, in one line
            if not line.startswith("dispatch calibrate: the machine was busy: ")]
    assert said == [
        f"wrote {out}",
        "kept the stored measurements of torch-cpu",
        f"stored {stored_path(cache)}",
    ]
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"calibration {calibration.fingerprint()} (quick, measured ")
    assert lines[1] == f"file: {stored_path(cache)}"
    header = lines.index(next(line for line in lines if line.startswith("target ")))
    assert lines[header].split() == ["target", "device", "threads", "call", "overhead", "launch+sync", "memory",
                                     "GEMM", "f64", "GEMM", "f32", "to", "device", "to", "host"]  # fmt: skip
    assert lines[header + 1].startswith("numpy      cpu") and "FLOP/s" in lines[header + 1]
    assert lines[header + 2].startswith("torch-cpu  cpu")
    assert "complexity  seed SIMD    seed GPU   measured SIMD  measured GPU" in done.stdout
    assert "LOW         > 1,000,000  never" in done.stdout

    written = json.loads(out.read_text())
    assert written == json.loads(stored_path(cache).read_text())
    assert written["quick"] is True and set(written["targets"]) == {"numpy", "torch-cpu"}
    numpy_ops = written["targets"]["numpy"]["ops"]["float64"]
    assert {"add", "sum", "matmul", "sort", "linalg.svd"} <= set(numpy_ops)
    assert numpy_ops["add"] != synthetic().targets["numpy"]["ops"]["float64"]["add"]  # measured now
    assert written["targets"]["torch-cpu"] == synthetic().targets["torch-cpu"]  # kept

    # --show prints the stored calibration without measuring; --json prints it as stored
    assert main(["calibrate", "--show"]) == 0
    shown = capsys.readouterr().out
    assert shown.splitlines()[:2] == lines[:2] and "numpy      cpu" in shown
    assert main(["calibrate", "--show", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == written


def test_calibrate_show_a_gpu_calibration(cache, tmp_path, capsys):
    gpu = tmp_path / "gpu.json"
    synthetic(gpu=True, fingerprint="feedfacefeedface").save(gpu)
    assert main(["calibrate", "--show", str(gpu)]) == 0
    out = capsys.readouterr().out
    assert "machine: Synthetic CPU, 16 cores; Synthetic GPU (cupy)" in out
    row = next(line for line in out.splitlines() if line.startswith("cupy"))
    assert row.split()[:2] == ["cupy", "cuda:0"] and row.endswith("10 GB/s    10 GB/s")  # staged transfers
    # the synthetic GPU beats every CPU engine on big matrix products, host data and all
    high = next(line for line in out.splitlines() if line.startswith("HIGH"))
    assert high.split()[1:5] == [">", "1,000", ">", "10,000"] and "never" not in high.split()[-2:]


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--only", "nope"], 2, "unknown target 'nope'; known: numpy, torch-cpu, cupy, torch-cuda, torch-mps\n"),
        (["--only", "dask"], 2, "target dask is reached by size, never priced: there is nothing to calibrate"),
        (["--show", "missing.json"], 2, "no such calibration: missing.json"),
        (["--show", "--quick"], 2, "--show measures nothing: it takes no --quick, --only or --out"),
        (["--show"], 1, "this machine is not calibrated (nothing at"),
    ],
)
def test_calibrate_errors_are_one_line(cache, capsys, args, code, message):
    assert main(["calibrate", *args]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"dispatch calibrate: error: {message}") and err.count("\n") == 1


def test_calibrate_an_unavailable_target_says_why(cache, capsys):
    missing = targets.unavailable()
    if not missing:
        pytest.skip("every target is available here")
    name, reason = next(iter(missing.items()))
    assert main(["calibrate", "--quick", "--only", name]) == 1
    assert capsys.readouterr().err == f"dispatch calibrate: error: target {name} is not available here: {reason}\n"


# The interpreter is started with an object whose teardown says so, and an exit handler.
_WATCHED = """
import atexit, runpy, sys
class Watched:
    def __del__(self):
        print("torn down", file=sys.stderr)
watched = Watched()
atexit.register(print, "exit handler ran", file=sys.stderr)
sys.argv[0] = "dispatch"
runpy.run_module("dispatch", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("args, code", [(["calibrate", "--show"], 0), (["calibrate", "--only", "nope"], 2)])
def test_calibrate_ends_without_the_interpreters_teardown(cache, args, code):
    synthetic().save(stored_path(cache))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONUNBUFFERED", None)  # piped, the output is buffered
    done = subprocess.run([sys.executable, "-c", _WATCHED, *args], capture_output=True, text=True, env=env)
    assert done.returncode == code
    assert done.stderr.splitlines()[-1] == "exit handler ran" and "torn down" not in done.stderr
    if code == 0:  # the output, piped, was flushed
        assert done.stdout.startswith("calibration ") and "\nLOW " in done.stdout
    # another command ends as the interpreter ends any program
    done = subprocess.run([sys.executable, "-c", _WATCHED, "info"], capture_output=True, text=True, env=env)
    assert (done.returncode, done.stderr.splitlines()) == (0, ["exit handler ran", "torn down"])


def test_cli_help_lists_every_command():
    done = dispatch_cli("--help")
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("    ") and line[4] != " "]
    assert {"info", "calibrate", "run", "analyze", "migrate"} <= set(listed)


def test_cli_version_is_the_package_version():
    import dispatch

    done = dispatch_cli("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"dispatch {dispatch.__dispatch_version__}")
