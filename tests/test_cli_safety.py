"""The command line never destroys input: reports go to stdout unless an option names a file,
no option overwrites a source file, and a user's mistake is one line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dispatch import measure
from dispatch.cli import main
from dispatch.routing import calibration

ROOT = Path(__file__).resolve().parent.parent
APP = "import numpy as np\nx = np.ones((300, 300))\ny = np.dot(x, x)\n"
OTHER = "import numpy as np\nz = np.fft.fft(np.ones(1000))\n"


@pytest.fixture
def sources(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path / "cache"))
    calibration._loaded.clear()
    Path("a.py").write_text(APP)
    Path("b.py").write_text(OTHER)
    Path("n.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    yield tmp_path
    calibration._loaded.clear()


def _unchanged() -> None:
    assert Path("a.py").read_text() == APP and Path("b.py").read_text() == OTHER
    assert json.loads(Path("n.ipynb").read_text())["cells"] == []


def _one_line(capsys, code: int, got: int, message: str) -> None:
    err = capsys.readouterr().err
    assert got == code and err.count("\n") == 1 and message in err, err


def test_json_goes_to_stdout_and_every_path_is_analysed(sources, capsys):
    assert main(["analyze", "--json", "a.py", "b.py"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["files"] == 2
    assert {Path(s["path"]).name for s in report["sites"]} == {"a.py", "b.py"}
    _unchanged()


def test_output_names_the_file(sources, capsys):
    assert main(["analyze", "a.py", "-o", "report.json"]) == 0
    out, err = capsys.readouterr()
    assert "np.dot" in out and err == "wrote report.json\n"  # the table still on the terminal
    assert json.loads(Path("report.json").read_text())["summary"]["files"] == 1
    assert main(["analyze", "a.py", "--output", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["files"] == 1


@pytest.mark.parametrize("args", [
    ["analyze", "a.py", "-o", "b.py"],
    ["analyze", "a.py", "--output", "n.ipynb"],
    ["analyze", "a.py", "--html", "b.py"],
    ["run", "--profile", "b.py", "a.py"],
    ["calibrate", "--quick", "--out", "a.py"],
], ids=["output", "output-notebook", "html", "run-profile", "calibrate-out"])
def test_no_option_overwrites_a_source_file(sources, capsys, monkeypatch, args):
    monkeypatch.setattr(measure, "calibrate", _never)
    _one_line(capsys, 2, main(args), "refusing to overwrite a source file")
    _unchanged()


def test_json_and_output_are_one_choice(sources, capsys):
    _one_line(capsys, 2, main(["analyze", "a.py", "--json", "-o", "r.json"]), "choose one")
    assert not Path("r.json").exists()


def test_output_into_a_missing_folder_is_refused_before_analysing(sources, capsys):
    _one_line(capsys, 2, main(["analyze", "a.py", "-o", "no/r.json"]), "no folder")


def test_migrate_writes_only_when_asked(sources, capsys):
    assert main(["migrate", "a.py", "b.py"]) == 0
    assert "+import dispatch as np" in capsys.readouterr().out
    _unchanged()


def _never(*args, **kwargs):
    raise AssertionError("measured although the calibration could not be stored")


def test_calibrate_refuses_a_cache_folder_that_is_a_file_before_measuring(sources, capsys, monkeypatch):
    Path("cachefile").write_text("")
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(sources / "cachefile"))
    monkeypatch.setattr(measure, "calibrate", _never)
    _one_line(capsys, 2, main(["calibrate", "--quick"]), "cannot use the cache folder")


def test_calibrate_with_a_file_for_the_cache_is_one_line_from_the_shell(sources):
    Path("cachefile").write_text("")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DISPATCH_CACHE_DIR": str(sources / "cachefile")}
    done = subprocess.run([sys.executable, "-m", "dispatch", "calibrate", "--quick"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("dispatch calibrate: error: cannot use the cache folder") and \
        done.stderr.count("\n") == 1, done.stderr
