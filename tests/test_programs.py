"""Programs nobody here wrote (``benchmarks.programs``) give NumPy's output under dispatch.

Each program runs at its tiny size with ``np`` bound to NumPy and to dispatch (routing, and
each target forced for the whole program), and prints the same summary: exactly under routing
and forced NumPy, within the benchmark's stated tolerance (``programs_bench.compare``) on the
other targets. The checks on the table keep the programs honest: plain NumPy scripts, seeded
only through ``default_rng``, with a cited source, and the tuning/validation split fixed.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import os
import sys
import warnings

import numpy
import pytest

import dispatch
from benchmarks import programs, programs_bench
from tests.conftest import backend_params, require

NAMES = [pytest.param(n, id=n) for n in programs.NAMES]
# Dask forced for every call computes each small array as a graph: minutes a program, even tiny.
FORCED = backend_params(tuple(t for t in dispatch.targets.names() if t != "dask"))


def _output(module, np_module, force: str | None = None) -> str:
    buf = io.StringIO()
    forcing = dispatch.using(force) if force else contextlib.nullcontext()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings(), forcing:
        warnings.simplefilter("error")  # NumPy's run warns of nothing: neither may dispatch's
        module.main(module.TINY)
    return buf.getvalue()


@functools.cache
def reference(name: str) -> str:
    return _output(programs.load_with(name, numpy), numpy)


# ---- the table -------------------------------------------------------------------------------------


def test_the_table_lists_every_program_once_in_one_half():
    files = sorted(f[:-3] for f in os.listdir(programs.FOLDER) if f.endswith(".py") and f != "__init__.py")
    assert list(programs.NAMES) == files
    assert len(files) >= 20
    assert set(programs.TUNING).isdisjoint(programs.VALIDATION)
    assert set(programs.TUNING) | set(programs.VALIDATION) == set(files)
    assert abs(len(programs.TUNING) - len(programs.VALIDATION)) <= 1
    assert programs.TUNING == programs.NAMES[0::2]  # the split is fixed: alternate names, alphabetical


@pytest.mark.parametrize("name", NAMES)
def test_each_program_is_a_plain_numpy_script(name):
    with open(programs.path(name), encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source)
    assert name not in sys.stdlib_module_names  # run as a script, its folder comes first on sys.path
    doc = ast.get_docstring(tree)
    assert doc and "Source:" in doc, "the docstring cites its source"
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    numpy_imports = [ast.unparse(n) for n in imports if "numpy" in ast.unparse(n)]
    assert numpy_imports == ["import numpy as np"]
    calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    randoms = {c for c in calls if c.startswith("np.random.")}
    assert randoms <= {"np.random.default_rng"}, randoms
    module = programs.load(name)
    assert isinstance(module.SIZE, int) and isinstance(module.TINY, int) and module.TINY < module.SIZE
    assert "__main__" in source


# ---- the drop-in ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_routed_program_prints_numpys_output(name):
    module = programs.load_with(name, dispatch)
    with dispatch.trace() as t:
        out = _output(module, dispatch)
    assert t.records, "the program's calls went through dispatch"
    assert out == reference(name)
    assert out.splitlines()[0].startswith(name)


@pytest.mark.parametrize("backend", FORCED)
@pytest.mark.parametrize("name", NAMES)
def test_forced_program_prints_numpys_output(name, backend):
    require(backend)
    out = _output(programs.load_with(name, dispatch), dispatch, force=backend)
    expected = reference(name)
    if backend == "numpy":
        assert out == expected
    else:
        assert programs_bench.compare(expected, out) != "DIFFERS", f"NumPy:\n{expected}\n{backend}:\n{out}"


# ---- the harness ------------------------------------------------------------------------------------


def test_compare_forgives_only_the_last_printed_digit_of_floats():
    assert programs_bench.compare("a 1.25 b 7\n", "a 1.25 b 7\n") == "exact"
    assert programs_bench.compare("a 1.25 b 7\n", "a 1.26 b 7\n") == "close"
    assert programs_bench.compare("a 1.25 b 7\n", "a 1.27 b 7\n") == "DIFFERS"
    assert programs_bench.compare("a 1.25 b 7\n", "a 1.25 b 8\n") == "DIFFERS"  # integers are exact
    assert programs_bench.compare("x 3.000000001e-05", "x 3.000000002e-05") == "close"
    assert programs_bench.compare("x 3.1e-05", "x 3.3e-05") == "DIFFERS"
    assert programs_bench.compare("x 0.123456789", "x 0.123456889") == "close"  # relative 1e-6
    assert programs_bench.compare("x 0.1234567", "x 0.1234587") == "DIFFERS"
    assert programs_bench.compare("a 1.25 b", "a 1.25 c") == "DIFFERS"
    assert programs_bench.compare("a [1, 2]", "a [1, 2, 3]") == "DIFFERS"


def test_cold_commands_are_what_a_user_types():
    script = programs.path("mandelbrot")
    assert programs_bench._command("numpy", script, ["16"]) == ([sys.executable, script, "16"], {})
    assert programs_bench._command("auto 2", script, []) == ([sys.executable, "-m", "dispatch", "run", script], {})
    assert programs_bench._command("forced:torch-cpu", script, [])[1] == {"DISPATCH_BACKEND": "torch-cpu"}


def test_cold_runs_report_the_engines_their_kept_file_names(monkeypatch, tmp_path):
    """A run's kept file, as ``learned.record`` writes it at the script's end, names the engines
    the run left up and what their bring-ups took; the cold benchmark reads them into its JSON
    (``up``). A folder with nothing kept, or a file that is not one, names none."""
    from dispatch.routing import learned

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DISPATCH_LEARN", "1")  # (off for the rest of the suite: tests/conftest.py)
    monkeypatch.setattr(learned, "_script", (str(tmp_path / "k.py"), "0" * 64))
    monkeypatch.setattr(learned, "_started_run", True)
    monkeypatch.setattr(learned, "_previous", None)
    monkeypatch.setattr(learned, "_history", None)
    monkeypatch.setattr(learned, "_saves", {})
    monkeypatch.setattr(learned, "_sections", {"bringup": lambda: {"cupy": 0.41}})
    monkeypatch.setattr(dispatch.targets.registry, "up", lambda: ["numpy", "cupy", "torch-cuda"])
    script = str(tmp_path / "k.py")
    assert programs_bench.engines_kept(str(tmp_path), script) == {}
    learned.record()
    assert programs_bench.engines_kept(str(tmp_path), script) == {"cupy": 0.41, "torch-cuda": None}
    assert programs_bench.engines_kept(str(tmp_path), str(tmp_path / "other.py")) == {}  # another script's
    learned.path_for(script).write_text("not JSON")
    assert programs_bench.engines_kept(str(tmp_path), script) == {}


def test_warm_harness_times_and_checks_each_contender(capsys):
    out = programs_bench.main(["--mode", "warm", "--size", "tiny", "--repeats", "1", "--only", "spectrogram",
                               "--targets", "numpy"])
    (result,) = out["modes"]["warm"]["programs"]
    assert set(result["best"]) == {"numpy", "auto", "forced:numpy", "oracle"}
    assert result["match"] == {"numpy": "exact", "auto": "exact", "forced:numpy": "exact"}
    assert result["half"] == "validation"
    # the oracle: NumPy's recorded run planned on the host alone (no other target here), or the
    # whole run on forced NumPy where that measured less; never more than a whole run on one target
    assert result["oracle"]["method"] in ("host only", "numpy for the whole run")
    assert result["oracle"]["targets"] == ["numpy"]
    assert 0.0 < result["best"]["oracle"] <= result["best"]["numpy"] + result["oracle"]["plan_seconds"]
    assert result["best"]["oracle"] <= result["best"]["forced:numpy"]
    printed = capsys.readouterr().out
    assert "| spectrogram |" in printed and "validation half" in printed and "auto / oracle" in printed


def test_the_oracle_is_no_more_than_a_whole_run_on_one_target():
    """Running every call on one target is a placement of the recorded graph: where its whole run
    measured less than the graph's price (recording each of a loop's small calls costs more than
    the call), that run is the oracle's time."""
    from benchmarks import oracle

    routed = programs.load_with("spectrogram", dispatch).main
    recordings = oracle.record(routed, [str(programs.load("spectrogram").TINY)], ["numpy"])
    priced = oracle.oracle(recordings, lambda *_: 0.0, None)
    assert priced["seconds"] > 0.0 and priced["method"] == "host only"
    assert oracle.oracle(recordings, lambda *_: 0.0, None, {"numpy": priced["seconds"] * 2})["seconds"] == \
        priced["seconds"]
    faster = oracle.oracle(recordings, lambda *_: 0.0, None, {"numpy": priced["seconds"] / 2, "cupy": 1e3})
    assert faster["seconds"] == priced["seconds"] / 2 and faster["method"] == "numpy for the whole run"


def test_warm_contenders_run_in_processes_of_their_own():
    """A failing contender is reported, its error kept, and cannot touch another's process."""
    tiny = [str(programs.load("mandelbrot").TINY)]
    broken = programs_bench._Contender("mandelbrot", "forced:no-such-target", tiny, 60)
    done = broken.run()
    broken.close()
    assert done["rc"] != 0 and "no-such-target" in done["stderr"]
    healthy = programs_bench._Contender("mandelbrot", "auto", tiny, 60)
    first, second = healthy.run(), healthy.run()
    healthy.close()
    assert first["rc"] == second["rc"] == 0 and first["stdout"] == second["stdout"] != ""
    assert healthy.proc.pid != broken.proc.pid != os.getpid()
