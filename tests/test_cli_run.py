"""``dispatch run``: the script's own NumPy imports are answered by dispatch while libraries
keep NumPy; Python's argv, sys.path, exit status and tracebacks; --report; --profile (sites,
counts, estimates with and without a calibration); scikit-learn acceleration; the examples
print exactly what plain Python prints."""

from __future__ import annotations

import builtins
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _synthetic import synthetic

from dispatch import tracing
from dispatch.cli import main
from dispatch.routing import calibration, router

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder for a script (and its helpers), an empty calibration cache, and the modules the
    script imports forgotten afterwards (each test's helpers are new files); scikit-learn's checks
    as they were (a run in this process, where scikit-learn is loaded, adapts them even with
    --no-sklearn: ``dispatch.sklearn._numpy_types``)."""
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path / "cache"))
    calibration._loaded.clear()
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.chdir(proj)
    before = set(sys.modules)
    numpy_types = sys.modules.get("dispatch.sklearn._numpy_types")
    adapted = numpy_types is not None and numpy_types.installed()
    yield proj
    for name in set(sys.modules) - before:
        file = getattr(sys.modules[name], "__file__", None) or ""
        if file.startswith(str(tmp_path)):
            del sys.modules[name]
    calibration._loaded.clear()
    numpy_types = sys.modules.get("dispatch.sklearn._numpy_types")
    if numpy_types is not None and not adapted:
        numpy_types.uninstall()


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def dispatch_cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m dispatch ARGS`` in a fresh interpreter."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "dispatch", *args], capture_output=True, text=True, cwd=cwd,
                          env=environ)  # fmt: skip


# ---- which imports get dispatch -----------------------------------------------------------------------


def test_the_scripts_own_numpy_is_dispatch_and_libraries_keep_numpy(project, capsys):
    library = project.parent / "lib" / "site-packages"
    write(library / "fakelib.py", """
        import importlib
        import numpy as np
        KIND = type(np.zeros(3)).__module__
        IMPORTED = importlib.import_module("numpy").__name__
        def total(x):
            return np.sum(x)
    """)
    write(project / ".venv" / "lib" / "python3.11" / "site-packages" / "vendored.py", """
        import numpy as np
        KIND = type(np.zeros(3)).__module__
    """)
    write(project / "pkg" / "helper.py", """
        import numpy as np
        KIND = type(np.zeros(3)).__module__
    """)
    write(project / "pkg" / "__init__.py", "")
    write(project / "app.py", f"""
        import importlib, json, sys
        sys.path.append({str(library)!r})
        sys.path.append({str(project / ".venv" / "lib" / "python3.11" / "site-packages")!r})
        import numpy as np
        import numpy.linalg as la
        import numpy.fft
        from numpy import fft, zeros
        from numpy.linalg import solve
        from numpy.typing import NDArray
        import fakelib, vendored
        from pkg import helper
        import sklearn.utils.validation as validation
        print("script", type(np.zeros(3)).__module__, np.__name__, la.__name__, numpy.__name__, fft.__name__)
        print("names", zeros.__module__, solve.__module__, NDArray.__module__)
        print("import_module", importlib.import_module("numpy").__name__,
              importlib.import_module("numpy.linalg").__name__)
        print("helper", helper.KIND)
        print("libraries", fakelib.KIND, fakelib.IMPORTED, vendored.KIND, validation.np.__name__, json.__name__)
        print("through a library", type(fakelib.total(np.ones(4))).__module__)
    """)
    assert main(["run", "--no-sklearn", "app.py"]) == 0
    out = capsys.readouterr().out.splitlines()
    import numpy.typing

    import dispatch

    array = type(dispatch.zeros(3)).__module__  # dispatch.ndarray
    assert array.startswith("dispatch")
    ndarray_alias = numpy.typing.NDArray.__module__  # NumPy's own (numpy._typing._array_like from NumPy 2.5 on)
    assert ndarray_alias.split(".")[0] == "numpy"
    assert out == [
        f"script {array} dispatch dispatch.linalg dispatch dispatch.fft",
        f"names {dispatch.zeros.__module__} dispatch.linalg {ndarray_alias}",
        "import_module dispatch dispatch.linalg",
        f"helper {array}",
        "libraries numpy numpy numpy numpy json",
        f"through a library {type(dispatch.ones(4).sum()).__module__}",
    ]


def test_the_hooks_and_the_interpreter_state_are_put_back(project, capsys):
    write(project / "app.py", "import sys\nsys.path.insert(0, 'elsewhere')\nprint(__name__)\n")
    argv, path, main_module = list(sys.argv), list(sys.path), sys.modules["__main__"]
    real_import, real_import_module = builtins.__import__, importlib.import_module
    assert main(["run", "--no-sklearn", "app.py"]) == 0
    assert capsys.readouterr().out == "__main__\n"
    assert (sys.argv, sys.path, sys.modules["__main__"]) == (argv, path, main_module)
    assert (builtins.__import__, importlib.import_module) == (real_import, real_import_module)


# ---- Python's behaviour ----------------------------------------------------------------------------


def test_argv_path_name_and_file_are_pythons(project, capsys):
    write(project / "sub" / "app.py", """
        import sys
        print(sys.argv)
        print(sys.path[0])
        print(__name__, __file__)
    """)
    assert main(["run", "--no-sklearn", "sub/app.py", "--report", "-x", "1"]) == 0  # options after SCRIPT are its own
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "['sub/app.py', '--report', '-x', '1']",
        str((project / "sub").resolve()),
        f"__main__ {project / 'sub' / 'app.py'}",
    ]


@pytest.mark.parametrize(
    "source, status, stderr",
    [
        ("import sys\nsys.exit(3)\n", 3, ""),
        ("import sys\nsys.exit()\n", 0, ""),
        ("import sys\nsys.exit('bye')\n", 1, "bye\n"),
        ("raise KeyboardInterrupt\n", 130, "KeyboardInterrupt"),
    ],
)
def test_exit_status_is_pythons(project, capsys, source, status, stderr):
    write(project / "app.py", source)
    assert main(["run", "--no-sklearn", "app.py"]) == status
    assert stderr in capsys.readouterr().err


def test_an_uncaught_exception_prints_pythons_traceback(project, capsys):
    write(project / "helper.py", """
        import numpy as np
        def boom():
            raise ValueError("boom")
    """)
    write(project / "broken_helper.py", """
        import numpy as np
        raise RuntimeError("at import") from KeyError("k")
    """)
    write(project / "app.py", """
        import sys
        import helper
        if sys.argv[1:] == ["import"]:
            import broken_helper
        helper.boom()
    """)
    for args in ([], ["import"]):
        plain = subprocess.run([sys.executable, "app.py", *args], capture_output=True, text=True, cwd=project)
        assert main(["run", "--no-sklearn", "app.py", *args]) == 1 == plain.returncode
        err = capsys.readouterr().err
        assert err == plain.stderr
        assert "Traceback (most recent call last):\n" in err and "dispatch" not in err


def test_errors_before_the_script_runs_are_one_line(project, capsys):
    write(project / "syntax.py", "x = (\n")
    (project / "folder").mkdir()
    assert main(["run", "missing.py"]) == 2
    assert capsys.readouterr().err == "dispatch run: error: no such script: missing.py\n"
    assert main(["run", "syntax.py"]) == 1
    assert capsys.readouterr().err == "dispatch run: error: syntax.py:1:5: cannot compile: '(' was never closed\n"
    assert main(["run", "folder"]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["run", "--profile", "nowhere/p.json", "syntax.py"]) == 1  # the script is checked first
    capsys.readouterr()
    write(project / "ok.py", "print('ran')\n")
    assert main(["run", "--profile", "nowhere/p.json", "ok.py"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("dispatch run: error: --profile nowhere/p.json: no folder")


# ---- --report ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ending, status", [("", 0), ("raise ValueError('late')\n", 1), ("sys.exit(4)\n", 4)])
def test_report_is_printed_at_the_end_whatever_the_ending(project, capsys, ending, status):
    write(project / "app.py", "import sys\nimport numpy as np\nx = np.ones(1000)\nfor _ in range(3):\n"
                              f"    x.sum()\nprint('done')\n{ending}")  # fmt: skip
    assert main(["run", "--no-sklearn", "--report", "app.py"]) == status
    captured = capsys.readouterr()
    assert captured.out == "done\n"  # the report goes to stderr
    assert "dispatch trace: 4 calls" in captured.err
    assert "sum" in captured.err and "ones" in captured.err
    assert tracing.SITE_FILTER is None and router.history.hot_calls_per_s == 10_000  # put back


# ---- --profile -------------------------------------------------------------------------------------------

LOOP = """\
import numpy as np
import helper
a = np.ones((300, 300))
for _ in range(5):
    b = a @ a
c = helper.spread(np.ones(1000))
print(float(b[0, 0]), float(c))
"""
HELPER = """\
import numpy as np


def spread(x):
    return np.std(x)
"""


def test_profile_sites_counts_and_roofline_estimates_uncalibrated(project, capsys):
    write(project / "helper.py", HELPER)
    write(project / "app.py", LOOP)
    assert main(["run", "--no-sklearn", "--profile", "out.json", "app.py"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "300.0 0.0\n"
    assert captured.err.startswith("dispatch run: wrote out.json (")
    profile = json.loads(Path("out.json").read_text())
    assert profile["version"] == 1 and profile["exit_code"] == 0 and profile["argv"] == ["app.py"]
    machine = profile["machine"]
    assert (machine["calibrated"], machine["calibration"], machine["estimates"]) == (False, None, "seed-roofline")
    calls = {(c["site"], c["op"]): c for c in profile["calls"]}
    matmul = calls[("app.py:5", "matmul")]
    assert (matmul["count"], matmul["shapes"], matmul["dtypes"]) == (5, [[300, 300]] * 2, ["float64"] * 2)
    assert matmul["seconds"] > 0 and matmul["target"] in machine["targets"]
    assert "numpy" in matmul["estimates"]  # the roofline, as totals over the 5 calls
    from dispatch.cli.estimate import estimate_seconds
    from dispatch.selector import Backend, OpComplexity

    one = estimate_seconds("matmul", OpComplexity.HIGH, 90_000)[Backend.SCALAR]
    assert matmul["estimates"]["numpy"] == pytest.approx(5 * one)
    assert calls[("helper.py:5", "std")]["count"] == 1  # a helper's call is its own site
    assert calls[("app.py:3", "ones")]["estimates"] == {}  # no input array: size unknown
    assert {c["site"].rpartition(":")[0] for c in profile["calls"]} == {"app.py", "helper.py"}


def test_a_library_call_is_sited_at_the_users_line(project, capsys):
    library = project.parent / "lib" / "site-packages"
    write(library / "fakelib.py", "import numpy as np\n\n\ndef total(x):\n    return np.sum(x)\n")
    write(project / "app.py", f"import sys\nsys.path.append({str(library)!r})\nimport numpy as np\nimport fakelib\n"
                              "x = np.ones(50)\nfakelib.total(x)\n")  # fmt: skip
    assert main(["run", "--no-sklearn", "--profile", "out.json", "app.py"]) == 0
    capsys.readouterr()
    sites = {(c["site"], c["op"]) for c in json.loads(Path("out.json").read_text())["calls"]}
    assert sites == {("app.py:5", "ones"), ("app.py:6", "sum")}


def test_profile_records_estimator_calls_at_the_users_lines(project, capsys):
    pytest.importorskip("sklearn")
    write(project / "app.py", """
        from sklearn.datasets import make_regression
        from sklearn.linear_model import Ridge

        X, y = make_regression(n_samples=200, n_features=5, random_state=0)
        model = Ridge().fit(X, y)
        print(model.predict(X[:3]).shape)
    """)
    try:
        assert main(["run", "--profile", "out.json", "app.py"]) == 0
    finally:
        import dispatch.sklearn

        dispatch.sklearn.unaccelerate()
    captured = capsys.readouterr()
    assert captured.out == "(3,)\n"
    profile = json.loads(Path("out.json").read_text())
    calls = {(c["site"], c["op"]): c for c in profile["calls"]}
    assert set(calls) >= {("app.py:6", "Ridge.fit"), ("app.py:7", "Ridge.predict")}
    fit = calls[("app.py:6", "Ridge.fit")]
    assert (fit["count"], fit["shapes"][0], fit["target"]) == (1, [200, 5], "numpy")
    assert "call sites, " in captured.err and "(0 call sites" not in captured.err


def test_profile_estimates_every_calibrated_target(project):
    cache = project.parent / "cache"
    synthetic(gpu=True).save(cache / f"calibration-{calibration.fingerprint()}.json")
    write(project / "helper.py", HELPER)
    write(project / "app.py", LOOP)
    done = dispatch_cli("run", "--no-sklearn", "--profile", "out.json", "app.py", cwd=project,
                        env={"DISPATCH_CACHE_DIR": str(cache)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    profile = json.loads((project / "out.json").read_text())
    machine = profile["machine"]
    assert (machine["calibrated"], machine["estimates"]) == (True, "calibration")
    assert machine["calibration"]["targets"] == ["cupy", "numpy", "torch-cpu"]
    matmul = [c for c in profile["calls"] if c["op"] == "matmul"]  # one entry per target it ran on
    assert {c["site"] for c in matmul} == {"app.py:5"} and sum(c["count"] for c in matmul) == 5
    assert all(set(c["estimates"]) == {"numpy", "torch-cpu", "cupy"} for c in matmul)
    # totals over each entry's calls: numpy's synthetic matmul costs 1 µs + 2e-10 s * 300**3 per call
    numpy_total = sum(c["estimates"]["numpy"] for c in matmul)
    assert numpy_total == pytest.approx(5 * (1e-6 + 2e-10 * 300**3), rel=0.02)


def test_calibrate_measures_a_quick_calibration_first_where_there_is_none(project, capsys, monkeypatch):
    from dispatch import measure

    asked = []

    def quick(quick: bool = False, progress: bool = True, **_: object):
        asked.append(quick)
        return synthetic(gpu=False)

    monkeypatch.setattr(measure, "calibrate", quick)
    write(project / "app.py", "import numpy as np\nx = np.ones((50, 50))\nprint(float((x @ x)[0, 0]))\n")
    assert main(["run", "--no-sklearn", "--calibrate", "--profile", "out.json", "app.py"]) == 0
    captured = capsys.readouterr()
    assert asked == [True] and captured.out == "50.0\n"
    assert "measuring a quick calibration first" in captured.err
    machine = json.loads(Path("out.json").read_text())["machine"]
    assert (machine["calibrated"], machine["estimates"]) == (True, "calibration")


def test_profile_written_when_the_script_fails(project, capsys):
    write(project / "app.py", "import numpy as np\nnp.ones(3).sum()\nraise SystemExit(5)\n")
    assert main(["run", "--no-sklearn", "--profile", "out.json", "app.py"]) == 5
    capsys.readouterr()
    profile = json.loads(Path("out.json").read_text())
    assert profile["exit_code"] == 5 and [c["op"] for c in profile["calls"]] == ["ones", "sum"]


def test_profile_paths_are_the_callers_when_the_script_changes_directory(project, capsys, monkeypatch):
    write(project / "app.py", "import os\nimport numpy as np\nos.chdir('..')\nnp.ones(3).sum()\n")
    monkeypatch.chdir(project)  # the script's chdir is undone after the test
    assert main(["run", "--no-sklearn", "--profile", "out.json", "app.py"]) == 0
    capsys.readouterr()
    calls = json.loads((project / "out.json").read_text())["calls"]
    assert [c["site"] for c in calls] == ["app.py:4", "app.py:4"]


def test_hot_ops_are_all_counted(project, capsys):
    write(project / "app.py", "import numpy as np\nx = np.ones(4)\nfor _ in range(20_000):\n    x + x\n")
    assert main(["run", "--no-sklearn", "--profile", "out.json", "app.py"]) == 0
    capsys.readouterr()
    calls = json.loads(Path("out.json").read_text())["calls"]
    assert [c["count"] for c in calls if c["op"] == "add"] == [20_000]  # one entry, every call counted


def test_profile_merges_into_analyze(project, capsys):
    write(project / "helper.py", HELPER)
    write(project / "app.py", LOOP)
    assert main(["run", "--no-sklearn", "--profile", "out.json", "app.py"]) == 0
    out = project / "report.json"
    assert main(["analyze", ".", "--profile", "out.json", "--output", str(out)]) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    merged = {(Path(s["path"]).name, s["line"], s["op"]): s["profile"] for s in report["sites"] if s["profile"]}
    assert merged[("app.py", 5, "matmul")]["count"] == 5
    assert merged[("helper.py", 5, "std")]["count"] == 1


# ---- scikit-learn -------------------------------------------------------------------------------------

SKLEARN_APP = """\
import numpy as np
from sklearn.decomposition import PCA
X = np.random.default_rng(0).standard_normal((200, 5))
print(PCA(n_components=2).fit_transform(X).shape)
try:
    import dispatch.sklearn
    print("accelerated", dispatch.sklearn.is_accelerated())
except ImportError:
    print("no dispatch.sklearn")
"""


def _has_sklearn_accelerator() -> bool:
    try:
        importlib.import_module("dispatch.sklearn")
    except ImportError:
        return False
    return True


def test_sklearn_without_the_accelerator_says_so_and_runs(project):
    pytest.importorskip("sklearn")
    if _has_sklearn_accelerator():
        pytest.skip("dispatch.sklearn exists: test_sklearn_is_accelerated covers it")
    write(project / "app.py", SKLEARN_APP)
    done = dispatch_cli("run", "app.py", cwd=project)
    assert done.returncode == 0 and done.stdout == "(200, 2)\nno dispatch.sklearn\n"
    assert done.stderr == (
        "dispatch run: note: scikit-learn is not accelerated: this dispatch has no dispatch.sklearn "
        "(NumPy calls are still routed)\n"
    )
    quiet = dispatch_cli("run", "--no-sklearn", "app.py", cwd=project)
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_sklearn_is_accelerated(project):
    pytest.importorskip("sklearn")
    if not _has_sklearn_accelerator():
        pytest.skip("dispatch.sklearn does not exist yet: `run` accelerates scikit-learn once it lands")
    write(project / "app.py", SKLEARN_APP)
    done = dispatch_cli("run", "app.py", cwd=project)
    assert (done.returncode, done.stdout) == (0, "(200, 2)\naccelerated True\n"), done.stderr
    plain = dispatch_cli("run", "--no-sklearn", "app.py", cwd=project)
    assert (plain.returncode, plain.stdout) == (0, "(200, 2)\naccelerated False\n"), plain.stderr


# The idioms of scikit-learn's own examples that hand it the script's NumPy objects: under
# ``dispatch run`` they are dispatch's, which scikit-learn's checks for NumPy's types take as the
# NumPy objects they stand for (``dispatch.sklearn._numpy_types``).
NUMPY_OBJECT_IDIOMS = {
    "a parameter grid made by np":
        'print(GridSearchCV(SVC(), {"C": np.logspace(-1, 1, 3)}, cv=3).fit(X, y).best_params_)',
    "a RandomState made by np":
        "print(train_test_split(X, y, random_state=np.random.RandomState(0))[3][:5])",
    "the stream goes on after scikit-learn's draws": """\
        rs = np.random.RandomState(0)
        print(rs.randint(100, size=3), train_test_split(X, y, random_state=rs)[3][:5], rs.randint(100, size=3))
        print(cross_val_score(SVC(), X, y, cv=KFold(3, shuffle=True, random_state=rs)), rs.rand())
        print(RandomForestClassifier(3, random_state=rs).fit(X, y).predict(X[::30]), rs.rand())""",
    "check_random_state": """\
        rs = np.random.RandomState(0)
        print(check_random_state(rs).rand(), rs.rand(), check_random_state(np.random) is check_random_state(None))""",
    "a randomized search over np arrays": """\
        search = RandomizedSearchCV(SVC(), {"C": np.logspace(-2, 2, 9), "gamma": ["scale", "auto"]}, n_iter=4,
                                    cv=3, random_state=np.random.RandomState(1))
        print(search.fit(X, y).best_params_)""",
    "compute_class_weight": 'print(compute_class_weight("balanced", classes=np.unique(y), y=y[20:]))',
    "a Generator, refused as NumPy's": """\
        try:
            RandomForestClassifier(3, random_state=np.random.default_rng(0)).fit(X, y)
        except Exception as error:
            print(type(error).__name__, str(error).partition(" at 0x")[0])""",
}


@pytest.mark.parametrize(("idiom", "options"), [
    *((idiom, ()) for idiom in NUMPY_OBJECT_IDIOMS.values()),
    (NUMPY_OBJECT_IDIOMS["the stream goes on after scikit-learn's draws"], ("--no-sklearn",)),
], ids=[*NUMPY_OBJECT_IDIOMS, "--no-sklearn"])
def test_scikit_learn_takes_the_scripts_numpy_objects_under_run(tmp_path, idiom, options):
    """Idioms of scikit-learn's own examples, each run by ``python SCRIPT`` and by ``dispatch run``:
    the same output, random draws included (scikit-learn accelerated or not)."""
    pytest.importorskip("sklearn")
    script = write(tmp_path / "idiom.py", textwrap.dedent("""\
        import numpy as np
        from sklearn.datasets import load_iris
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV, cross_val_score, train_test_split
        from sklearn.svm import SVC
        from sklearn.utils import check_random_state
        from sklearn.utils.class_weight import compute_class_weight
        X, y = load_iris(return_X_y=True)
        """) + textwrap.dedent(idiom))
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, check=True)
    routed = dispatch_cli("run", *options, str(script), cwd=tmp_path, env={"DISPATCH_CACHE_DIR": str(tmp_path)})
    assert (routed.returncode, routed.stdout) == (0, plain.stdout), routed.stderr[-800:]


# ---- the examples -------------------------------------------------------------------------------------


def test_numpy_workload_prints_exactly_what_python_prints(tmp_path):
    script = ROOT / "examples" / "numpy_workload.py"
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, check=True)
    routed = dispatch_cli("run", "--report", str(script), cwd=tmp_path, env={"DISPATCH_CACHE_DIR": str(tmp_path)})
    assert routed.returncode == 0, routed.stderr
    assert routed.stdout == plain.stdout and plain.stdout.startswith("shape: (64, 4096) nan left: 0\n")
    assert "dispatch trace:" in routed.stderr and "linalg.svd" in routed.stderr


def test_numpy_workload_profile_sites_are_its_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "workload.json"
    done = dispatch_cli("run", "--profile", str(out), "examples/numpy_workload.py", cwd=ROOT,
                        env={"DISPATCH_CACHE_DIR": str(tmp_path)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls = json.loads(out.read_text())["calls"]
    assert {c["site"].rpartition(":")[0] for c in calls} == {"examples/numpy_workload.py"}
    lines = (ROOT / "examples" / "numpy_workload.py").read_text().splitlines()
    svd = [c for c in calls if c["op"] == "linalg.svd"]
    assert len(svd) == 1 and "np.linalg.svd(cov" in lines[int(svd[0]["site"].rpartition(":")[2]) - 1]
    assert svd[0]["shapes"] == [[64, 64]] and svd[0]["count"] == 1


@pytest.mark.parametrize("argv", [["run", "x.py"], ["run", "x.py", "3", "--report", "-v"], ["run", "x.py", "-1"]])
def test_a_plain_run_gets_the_parsers_namespace_without_the_parser(argv):
    """``run SCRIPT ARGS...`` skips building the parser, for the same namespace: the script's
    arguments, options among them, are its own."""
    from dispatch.cli import _plain_run, build_parser

    assert vars(_plain_run(argv)) == vars(build_parser(argv).parse_args(argv))


@pytest.mark.parametrize("argv", [["run", "--report", "x.py"], ["run", "x.py", "--", "a"], ["run"], ["info"], []])
def test_options_and_other_commands_go_through_the_parser(argv):
    from dispatch.cli import _plain_run

    assert _plain_run(argv) is None
