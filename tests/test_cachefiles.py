"""The files dispatch keeps: written whole through unguessable temporary files, read only when
they are plain files of a sane size, checked before use; an odd file at a cache path never hangs,
exhausts memory, raises in a user's calls or ends a command with a traceback."""

from __future__ import annotations

import json
import math
import os
import resource
import stat
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy
import pytest
from _synthetic import synthetic
from helpers import router_restored

import dispatch
from dispatch.base import cachefiles
from dispatch.routing import calibration, router
from dispatch.routing.history import History

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 60  # a hang fails the test instead of blocking the suite
MEMORY = 6 * 2**30  # a child reading /dev/zero fails here instead of exhausting the machine


def _bounded(fn, *args):
    """``fn(*args)`` in a thread, failing the test if it takes over 10 s (a FIFO's open blocks)."""
    out: dict = {}

    def body():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:
            out["error"] = exc

    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), f"{fn.__name__} hung"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _child(code: str, cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DISPATCH_CACHE_DIR": str(cache)}
    command = [sys.executable, *(["-c", textwrap.dedent(code)] if code else []), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=LIMIT_S,
                          preexec_fn=_limit_memory, cwd=cache.parent)


# ---- the module -----------------------------------------------------------------------------------------


def test_read_refuses_links_fifos_folders_and_large_files(tmp_path):
    (tmp_path / "good.json").write_text('{"a": 1}')
    assert cachefiles.read_json(tmp_path / "good.json") == {"a": 1}
    os.symlink("/dev/zero", tmp_path / "zero")
    os.symlink(tmp_path / "good.json", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    (tmp_path / "large").write_text("1" * 1000)
    for name, why in (("zero", "symbolic link"), ("link", "symbolic link"), ("fifo", "not a regular file"),
                      ("folder", "not a regular file")):
        with pytest.raises(OSError, match=why):
            _bounded(cachefiles.read_text, tmp_path / name)
    with pytest.raises(OSError, match="larger than 999 bytes"):
        cachefiles.read_text(tmp_path / "large", 999)
    assert cachefiles.read_text(tmp_path / "large", 1000) == "1" * 1000
    with pytest.raises(FileNotFoundError):
        cachefiles.read_text(tmp_path / "missing")
    with pytest.raises(ValueError, match="nested too deeply"):
        (tmp_path / "deep").write_text("[" * 200_000)
        cachefiles.read_json(tmp_path / "deep")


def test_write_never_follows_a_planted_link(tmp_path):
    """In a shared folder, links planted at the destination and at the name the temporary file
    had before (``calibration-<fingerprint>.tmp``) leave the files they point to as they were."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    shared = tmp_path / "shared"
    shared.mkdir()
    cal = synthetic(fingerprint="0123456789abcdef")
    dest = shared / "calibration-0123456789abcdef.json"
    os.symlink(victim, shared / "calibration-0123456789abcdef.tmp")
    cal.save(dest)
    assert victim.read_text() == "precious"
    os.symlink(victim, shared / "other.json")
    cal.save(shared / "other.json")
    assert victim.read_text() == "precious"
    assert not (shared / "other.json").is_symlink()
    assert calibration.load(shared / "other.json").targets == cal.targets
    assert sorted(p.name for p in shared.iterdir()) == ["calibration-0123456789abcdef.json",
                                                        "calibration-0123456789abcdef.tmp", "other.json"]


def test_folders_made_for_the_cache_are_private(tmp_path, monkeypatch):
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path / "a" / "b"))
    where = synthetic(fingerprint="0123456789abcdef").save()
    assert where.parent == tmp_path / "a" / "b"
    for folder in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path / "file" / "c"))
    with pytest.raises(NotADirectoryError, match="not a folder"):
        synthetic(fingerprint="0123456789abcdef").save()


def test_the_cache_is_the_platforms_user_cache_folder(monkeypatch):
    platformdirs = pytest.importorskip("platformdirs")
    monkeypatch.delenv("DISPATCH_CACHE_DIR")
    assert calibration.cache_dir() == Path(platformdirs.user_cache_dir("dispatch", appauthor=False))
    monkeypatch.setenv("DISPATCH_CACHE_DIR", "/somewhere")
    assert calibration.cache_dir() == Path("/somewhere")


@pytest.mark.parametrize("xdg", [None, "", "  ", "/tmp/xdg-cache"])
def test_the_user_cache_folder_is_platformdirs_without_loading_it(monkeypatch, xdg):
    """The folder read without ``platformdirs`` (on Linux) is the one it names, XDG_CACHE_HOME
    set, empty or not."""
    platformdirs = pytest.importorskip("platformdirs")
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert cachefiles.user_cache_dir("dispatch") == Path(platformdirs.user_cache_dir("dispatch", appauthor=False))


def test_temporary_names_are_new_files_each_time(tmp_path):
    """Each write's temporary file is a new one (0600 while written, 0644 once renamed), and none
    is left behind."""
    made = {cachefiles._new_file(tmp_path, "x.json") for _ in range(50)}
    for fd, name in made:
        os.close(fd)
        assert stat.S_IMODE(os.stat(name).st_mode) == 0o600
    assert len({name for _, name in made}) == 50
    for _, name in made:
        os.unlink(name)
    cachefiles.write_text(tmp_path / "x.json", "{}")
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]
    assert stat.S_IMODE((tmp_path / "x.json").stat().st_mode) == cachefiles.FILE_MODE


_WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from _synthetic import synthetic
cal = synthetic(fingerprint="0123456789abcdef")
cal.machine["writer"] = {n}
cal.machine["padding"] = "x" * 200_000  # long enough that a write takes several system calls
for _ in range(60):
    cal.save(Path({path!r}))
"""
_READER = """
from pathlib import Path
from dispatch.routing import calibration
path, seen, reads = Path({path!r}), set(), 0
while reads < 5000 and (len(seen) < 3 or reads < 300):
    reads += 1
    try:
        cal = calibration.load(path)
    except FileNotFoundError:
        continue  # before the first save
    seen.add(cal.machine["writer"])
"""


def test_concurrent_saves_and_reads(tmp_path):
    """Three processes save one calibration file 60 times each while two read it: every save
    succeeds and every read is one whole file."""
    path = tmp_path / "calibration-0123456789abcdef.json"
    tests = str(ROOT / "tests")
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER.format(tests=tests, n=n, path=str(path))],
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
               for n in range(3)]
    readers = [subprocess.Popen([sys.executable, "-c", _READER.format(path=str(path))], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
               for _ in range(2)]
    for child in writers + readers:
        _, err = child.communicate(timeout=LIMIT_S * 2)
        assert child.returncode == 0, err[-2000:]
    assert json.loads(path.read_text())["machine"]["writer"] in (0, 1, 2)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind


# ---- a stored calibration that is no calibration --------------------------------------------------------


def _valid() -> dict:
    return json.loads(synthetic().to_json())


def _with(change) -> str:
    data = _valid()
    change(data)
    return json.dumps(data)


BAD_FILES = {
    "a list": "[]",
    "null": "null",
    "a number": "3",
    "not JSON": "{version: 1",
    "nested too deeply": "[" * 100_000,
    "targets a list": _with(lambda d: d.update(targets=[])),
    "a target a string": _with(lambda d: d["targets"].update(numpy="fast")),
    "machine null": _with(lambda d: d.update(machine=None)),
    "gpus a string": _with(lambda d: d["machine"].update(gpus="none")),
    "an unknown device": _with(lambda d: d["targets"]["numpy"].update(device="tpu")),
    "a zero time": _with(lambda d: d["targets"]["numpy"]["ops"]["float64"]["sum"].__setitem__(0, [1000, 0.0])),
    "a negative time": _with(lambda d: d["targets"]["torch-cpu"]["ops"]["float64"]["sum"][1].__setitem__(1, -1)),
    "a time in a string": _with(lambda d: d["targets"]["numpy"]["ops"]["float64"]["sum"][1].__setitem__(1, "1")),
    "sizes falling": _with(lambda d: d["targets"]["numpy"]["ops"]["float64"]["sum"].reverse()),
    "a point of three": _with(lambda d: d["targets"]["numpy"]["ops"]["float64"]["add"][0].append(1)),
    "ops a list": _with(lambda d: d["targets"]["numpy"].update(ops=[])),
    "curves a number": _with(lambda d: d["targets"]["numpy"]["ops"].update(float64=1)),
    "bandwidth NaN": _with(lambda d: d["targets"]["numpy"].update(memory_bandwidth=math.nan)),
    "overhead infinite": _with(lambda d: d["targets"]["numpy"].update(call_overhead_s=math.inf)),
    "threads a string": _with(lambda d: d["targets"]["numpy"].update(threads="2")),
    "transfer a list": _with(lambda d: d["targets"]["numpy"].update(transfer=[1])),
    "seconds a string": _with(lambda d: d.update(seconds="1")),
}


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    with router_restored(History()):
        yield tmp_path / f"calibration-{calibration.fingerprint()}.json"


@pytest.mark.parametrize("text", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_calibration_is_ignored_with_one_warning(isolated, text):
    isolated.write_text(text)
    a = numpy.linspace(0, 1, 2_000_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            got = dispatch.sum(dispatch.asarray(a))
            assert numpy.asarray(got).dtype == numpy.float64
            numpy.testing.assert_allclose(numpy.asarray(got), a.sum(), rtol=1e-12)
        assert calibration.load() is None
    assert router.policy() == "seed"
    assert sum("ignores the calibration" in str(w.message) for w in caught) == 1
    with pytest.raises(ValueError, match=r"not a usable calibration|JSON|Expecting"):
        calibration.load(isolated)


def test_the_good_file_the_bad_ones_came_from_is_used(isolated):
    isolated.write_text(json.dumps(_valid()))
    dispatch.sum(dispatch.ones(2_000_000))
    assert router.policy() == "cost"


def test_a_calibration_of_other_libraries_is_named_once_and_a_bad_one_here_is_not(isolated, caplog):
    """A calibration stored for another fingerprint (torch added, say) gets the one line naming
    the command; a bad file at this machine's own path gets only its own warning, not that line."""
    isolated.write_text("[]")
    with caplog.at_level("WARNING", logger="dispatch"), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert router.policy() == "seed"
    assert not [r for r in caplog.records if "other libraries" in r.getMessage()]
    isolated.unlink()
    (isolated.parent / "calibration-0123456789abcdef.json").write_text(json.dumps(_valid()))
    calibration._loaded.clear()
    router.clear_decisions()
    with caplog.at_level("WARNING", logger="dispatch"):
        router._say_when_a_calibration_no_longer_applies()
    assert [r for r in caplog.records if "other libraries" in r.getMessage()]


ODD_THINGS = {
    "a FIFO": "os.mkfifo(path)",
    "a link to /dev/zero": "os.symlink('/dev/zero', path)",
    "a folder": "path.mkdir()",
    "a list": "path.write_text('[]')",
    "null": "path.write_text('null')",
    "wrong types": f"path.write_text({BAD_FILES['a negative time']!r})",
}
_ODD_CHILD = """
import contextlib, io, json, os, shutil, numpy
from pathlib import Path
import dispatch as np
from dispatch.routing import calibration, router
from dispatch.cli import main

path = calibration.cache_dir() / f"calibration-{calibration.fingerprint()}.json"
Path("prog.py").write_text("import numpy as np\\nx = np.ones(10**6)\\nprint(np.sum(x))\\n")
a = numpy.linspace(0, 1, 2_000_000)
for name, make in %s.items():
    calibration._loaded.clear()
    router.ROUTER.calibration_checked = False
    exec(make)
    row = {"name": name, "sum": float(np.sum(np.asarray(a))), "want": float(a.sum()), "policy": router.policy()}
    for command in (["info"], ["analyze", "prog.py"], ["calibrate", "--show"]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            row[command[0]] = [main(command), out.getvalue(), err.getvalue()]
    print(json.dumps(row))
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
"""


@pytest.mark.slow
def test_programs_and_commands_pass_an_odd_cache_file(tmp_path):
    """A FIFO, a link to /dev/zero, a folder, a JSON list, null or wrong types at the calibration's
    path: a program's calls are NumPy's, ``info`` and ``analyze`` succeed, ``calibrate --show``
    fails with one line; in a child process bounded in time and memory."""
    (tmp_path / "cache").mkdir()
    done = _child(_ODD_CHILD % ODD_THINGS, tmp_path / "cache")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["name"] for row in rows] == list(ODD_THINGS)
    for row in rows:
        assert math.isclose(row["sum"], row["want"], rel_tol=1e-12), row["name"]
        assert row["policy"] == "seed"
        code, out, _ = row["info"]
        assert code == 0 and "calibration:" in out, row["name"]
        code, out, _ = row["analyze"]
        assert code == 0 and "np.sum" in out, row["name"]
        code, _, err = row["calibrate"]
        assert code == 1 and err.startswith("dispatch calibrate: error: this machine is not calibrated"), row["name"]
        assert len(err.splitlines()) == 1


@pytest.mark.parametrize("name", ["a list", "null", "a negative time"])
def test_the_commands_refuse_a_bad_calibration_named_on_the_line(tmp_path, capsys, name):
    from dispatch.cli import main

    (tmp_path / "bad.json").write_text(BAD_FILES[name])
    assert main(["calibrate", "--show", str(tmp_path / "bad.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dispatch calibrate: error: cannot read calibration") and len(err.splitlines()) == 1


# ---- a saved history ----------------------------------------------------------------------------------


def test_a_bad_history_adds_nothing(tmp_path):
    good = History()
    good.observe(("sum", (numpy.dtype("float64"),), 20, frozenset(), None, None), "numpy", 1e-3)
    good.save(tmp_path / "h.json")
    rows = json.loads((tmp_path / "h.json").read_text())
    assert rows["stats"]
    cases = {"list": [], "null": None, "row a string": {**rows, "stats": ["x"]},
             "seconds a string": {**rows, "stats": [{**rows["stats"][0], "seconds": "fast"}]},
             "samples infinite": {**rows, "stats": [{**rows["stats"][0], "samples": math.inf}]},
             "a key with a list": {**rows, "stats": [{**rows["stats"][0], "key": ["sum", ["float64"], [1], []]}]},
             "a good row, then a bad one": {**rows, "stats": [rows["stats"][0], {**rows["stats"][0], "samples": "x"}]}}
    for name, data in cases.items():
        (tmp_path / "bad.json").write_text(json.dumps(data))
        fresh = History()
        with pytest.raises(ValueError, match="not a saved history"):
            fresh.load(tmp_path / "bad.json")
        assert fresh.stats == {}, name
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        _bounded(History().load, tmp_path / "fifo")
    again = History()
    again.load(tmp_path / "h.json")
    assert again.stats == good.stats
