"""``dispatch analyze``: classification, recommendations, the model estimate, the terminal
table, the JSON schema, the HTML page and the profile merge."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dispatch import Backend, OpComplexity
from dispatch.cli import _pricing, main
from dispatch.cli.estimate import estimate_seconds

ROOT = Path(__file__).resolve().parent.parent
TIERS_HERE = _pricing.tiers_here
DATA = ROOT / "tests" / "data"

APP = "import numpy as np\n\nA = np.ones((300, 300))\nB = np.dot(A, A)\nnp.sum(unknown)\nnp.float64(1)\n"

SITE_KEYS = {
    "path", "line", "column", "cell", "source", "library", "name", "op", "method", "complexity",
    "size", "shape", "tier", "model_estimate_seconds", "model_estimate_source", "profile",
}  # fmt: skip
PROFILE_KEYS = {
    "site", "op", "count", "shapes", "dtypes", "target", "seconds", "estimates", "recommended_target", "speedup",
    "hardware",
}  # fmt: skip


@pytest.fixture(autouse=True)
def uncalibrated(tmp_path_factory, monkeypatch):
    """An empty calibration cache: the model estimate is the seed roofline, whatever the
    machine running the tests has stored."""
    from dispatch.routing import calibration

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setattr(_pricing, "tiers_here", lambda: set(Backend))  # a machine with every tier
    calibration._loaded.clear()
    yield
    calibration._loaded.clear()


@pytest.fixture
def app(tmp_path, monkeypatch):
    """A small script in the working directory, named ``app.py``."""
    monkeypatch.chdir(tmp_path)
    Path("app.py").write_text(APP)
    return tmp_path


def analyze_json(*args: str) -> dict:
    out = Path("report.json")
    assert main(["analyze", *args, "--output", str(out)]) == 0
    return json.loads(out.read_text())


# ---- the model estimate ----------------------------------------------------------------------


def test_estimate_is_a_roofline_with_the_seed_defaults():
    dot = estimate_seconds("dot", OpComplexity.HIGH, 90_000)
    assert list(dot) == [Backend.SCALAR, Backend.SIMD, Backend.GPU]
    # two 300 x 300 operands: flops 2 * 300**3, bytes 3 * 8 * 90,000
    assert dot[Backend.SCALAR] == pytest.approx(5.4e7 / 50e9)
    assert dot[Backend.SIMD] == pytest.approx(5.4e7 / 200e9)
    assert dot[Backend.GPU] == pytest.approx(10e-6 + 2.16e6 / 10e9 + 5.4e7 / 20e12)
    add = estimate_seconds("add", OpComplexity.LOW, 1_000_000)
    assert add[Backend.SCALAR] == pytest.approx(16e6 / 10e9)  # an operand read, the result written
    assert add[Backend.GPU] > add[Backend.SCALAR]  # memory-bound work never gains from the GPU


def test_estimate_host_only_work_and_unknown_ops():
    assert list(estimate_seconds("random.normal", OpComplexity.LOW, 1000)) == [Backend.SCALAR]
    assert list(estimate_seconds("save", OpComplexity.LOW, 1000)) == [Backend.SCALAR]
    assert list(estimate_seconds("DataLoading", OpComplexity.LOW, 1000)) == [Backend.SCALAR]
    unknown = estimate_seconds("not-an-op", OpComplexity.HIGH, 90_000)
    assert unknown == estimate_seconds("matmul", OpComplexity.HIGH, 90_000)


def test_work_is_counted_from_the_operands_shapes():
    from dispatch.cli.estimate import work_of

    lstsq = work_of("linalg.lstsq", [[300_000, 12], [300_000]])
    # a QR of the tall matrix (2 p q²), then its 12 x 12 triangle; column by column, as 12 < 32:
    # the trailing matrix read and written once a column
    assert lstsq.kind == "tall" and lstsq.flops == pytest.approx(2 * 300_000 * 144 + 8 / 3 * 12**3 + 4 * 300_000 * 12)
    assert lstsq.nbytes == pytest.approx(8 * (2 * 3.6e6 + 2 * 300_000) + 8 * 2.5 * 300_000 * 144)
    matvec = work_of("matmul", [[300_000, 12], [12]])
    assert (matvec.flops, matvec.nbytes) == (2 * 3.6e6, 8 * (3.6e6 + 12 + 300_000))
    gram = work_of("matmul", [[12, 300_000], [300_000, 12]])
    assert gram.flops == 2 * 144 * 300_000 and gram.grain == pytest.approx(2 * 12**3)  # skinny: a small rate
    square = work_of("linalg.solve", [[1000, 1000], [1000]])
    assert (square.kind, square.flops) == ("lu", pytest.approx(2 / 3 * 1e9 + 4 * 1000 * 1000))
    rows = work_of("fft.rfft", [[64, 4096]])
    assert rows.flops == pytest.approx(0.25 * 5 * 64 * 4096 * 12) and rows.grain == pytest.approx(rows.flops / 64)
    assert work_of("argsort", [[1000]]).flops == 5 * work_of("sort", [[1000]]).flops
    assert work_of("sin", [[1000]]).kind == "exp" and work_of("add", [[1000], [1000]]).kind == "map"
    assert work_of("random.normal", [[1000]]).host and work_of("not-an-op", [[1000]]) is None
    # nonzero of a (64, 4096) mask took 1-2.6 ms on NumPy, priced as a 524 KB copy at 0.05 ms
    flat, rows = work_of("nonzero", [[262_144]], 1), work_of("nonzero", [[64, 4096]], 1)
    assert (flat.kind, flat.flops, rows.flops) == ("map", 262_144, 5 * 262_144)


def test_a_shape_in_the_source_prices_a_tall_matrix_as_tall():
    square = estimate_seconds("linalg.lstsq", OpComplexity.HIGH, 3_600_000)
    tall = estimate_seconds("linalg.lstsq", OpComplexity.HIGH, 3_600_000, (300_000, 12))
    # the seed: a square matrix of as many elements, against the tall one the source shows
    assert square[Backend.SCALAR] == pytest.approx(8 / 3 * 1897**3 / 50e9, rel=1e-3)
    assert tall[Backend.SCALAR] == pytest.approx((8 * 2 * 3.6e6 + 8 * 2.5 * 300_000 * 144) / 10e9)
    assert tall[Backend.SCALAR] < square[Backend.SCALAR] / 3
    product = estimate_seconds("matmul", OpComplexity.HIGH, 3_600_000, (300_000, 12))  # (300000, 12) @ (12, 12)
    assert product[Backend.SCALAR] == pytest.approx(max(8 * (2 * 3.6e6 + 144) / 10e9, 2 * 300_000 * 144 / 50e9))
    gram = estimate_seconds("matmul", OpComplexity.HIGH, 3_600_000, (12, 300_000))  # Z.T @ Z: (12, 12) out
    assert gram[Backend.SCALAR] == pytest.approx(max(8 * (2 * 3.6e6 + 144) / 10e9, 2 * 144 * 300_000 / 50e9))
    assert estimate_seconds("add", OpComplexity.LOW, 3_600_000, (300_000, 12)) == estimate_seconds(
        "add", OpComplexity.LOW, 3_600_000)  # element-wise work: the shape changes nothing


def test_a_calibration_prices_the_work_over_its_measured_rates():
    from _synthetic import synthetic

    from dispatch.cli._pricing import CalibratedEstimator, price_call

    cal = synthetic(gpu=False, fingerprint="feedfacefeedface")
    estimator = CalibratedEstimator(cal)
    tall = estimator("linalg.lstsq", OpComplexity.HIGH, 3_600_000, (300_000, 12))
    want = price_call("linalg.lstsq", [[300_000, 12]], ["float64"], cal)
    assert tall[Backend.SCALAR] == pytest.approx(want["numpy"])
    assert tall[Backend.SCALAR] < estimator("linalg.lstsq", OpComplexity.HIGH, 3_600_000)[Backend.SCALAR] / 10
    # numpy's synthetic matmul: 1 µs a call and 2e-10 s per x³, i.e. 1e10 FLOP/s; 10 GB/s
    product = price_call("matmul", [[1024, 1024], [1024, 1024]], ["float64"] * 2, cal)
    assert product["numpy"] == pytest.approx(1e-6 + 2 * 1024**3 / 1e10)
    # a product 4x larger than the largest measured is priced at that size's rate, not extrapolated
    assert price_call("matmul", [[4096, 4096], [4096, 4096]], ["float64"] * 2, cal)["numpy"] == pytest.approx(
        1e-6 + 2 * 4096**3 / 1e10)
    # memory-bound: a vector product of 1e6 reads its 8 MB matrix at the calibrated 10 GB/s
    assert price_call("matmul", [[1000, 1000], [1000]], ["float64"] * 2, cal)["numpy"] == pytest.approx(
        1e-6 + 8 * (1e6 + 2000) / 10e9)


def test_host_only_work_is_never_given_a_faster_tier(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("r.py").write_text("import numpy as np\nZ = np.random.rand(300_000, 12)\n")
    site = analyze_json("r.py")["sites"][0]
    assert (site["op"], site["size"], site["tier"]) == ("random.rand", 3_600_000, "SCALAR")
    assert list(site["model_estimate_seconds"]) == ["SCALAR"]


# ---- table and JSON ----------------------------------------------------------------------------


def test_plain_table_exactly(app, capsys):
    assert main(["analyze", "app.py"]) == 0
    out = capsys.readouterr().out
    assert out == (
        "location    call                 op    complexity       n  tier          model estimate (best)\n"
        "app.py:3:5  np.ones((300, 300))  ones  LOW         90,000  SCALAR        SCALAR 72 µs\n"
        "app.py:4:5  np.dot(A, A)         dot   HIGH        90,000  GPU           GPU 229 µs ×4.7\n"
        "app.py:5:1  np.sum(unknown)      sum   MEDIUM           ?  size unknown  -\n"
        "\n"
        "3 call sites in 1 file: 1 SCALAR, 0 SIMD, 1 GPU, 1 size unknown.\n"
        "1 library call outside the catalogs (unclassified): numpy.float64\n"
        "Tier: the seed's MoE table. Estimates are a model (seed roofline, data on the host), not measurements.\n"
    )


def test_rich_table_has_the_same_cells(app):
    rich_console = pytest.importorskip("rich.console")
    from converters.scanner import scan_path
    from dispatch.cli._report import build_report
    from dispatch.cli._table import render_rich
    from dispatch.cli.estimate import MODEL

    report = build_report(["app.py"], scan_path("app.py"), estimate_seconds, MODEL)
    console = rich_console.Console(record=True, width=200)
    render_rich(report, console)
    text = console.export_text()
    for cell in ("app.py:4:5", "np.dot(A, A)", "GPU 229 µs ×4.7", "size unknown", "3 call sites in 1 file"):
        assert cell in text


def test_terminal_without_rich_falls_back_to_plain_text(app, capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setitem(sys.modules, "rich.console", None)  # as if rich were not installed
    assert main(["analyze", "app.py"]) == 0
    assert capsys.readouterr().out.startswith("location    call                 op    complexity")


def test_json_schema(app):
    report = analyze_json("app.py")
    assert set(report) == {
        "version", "paths", "estimate_model", "hardware", "summary", "sites", "unclassified", "errors", "profile",
        "profile_only",
    }  # fmt: skip
    assert report["version"] == 1
    assert report["paths"] == ["app.py"]
    assert report["estimate_model"]["kind"] == "model estimate"
    assert report["estimate_model"]["name"] == "seed-roofline" and report["hardware"] is None
    assert report["summary"] == {
        "files": 1,
        "sites": 3,
        "unclassified": 1,
        "errors": 0,
        "tiers": {"SCALAR": 1, "SIMD": 0, "GPU": 1, "unknown": 1},
        "model_estimate_seconds_total": pytest.approx(
            {"SCALAR": 0.001152, "SIMD": 0.000342, "GPU": 0.0003107, "best": 0.0003007}
        ),
    }
    assert all(set(site) == SITE_KEYS for site in report["sites"])
    dot = report["sites"][1]
    assert {k: dot[k] for k in SITE_KEYS - {"model_estimate_seconds", "model_estimate_source"}} == {
        "path": "app.py",
        "line": 4,
        "column": 5,
        "cell": None,
        "source": "np.dot(A, A)",
        "library": "numpy",
        "name": "numpy.dot",
        "op": "dot",
        "method": None,
        "complexity": "HIGH",
        "size": 90_000,
        "shape": [300, 300],
        "tier": "GPU",
        "profile": None,
    }
    assert list(dot["model_estimate_seconds"]) == ["SCALAR", "SIMD", "GPU"]
    assert dot["model_estimate_source"] == "seed-roofline"
    unknown = report["sites"][2]
    assert (unknown["op"], unknown["size"], unknown["tier"], unknown["model_estimate_seconds"]) == (
        "sum",
        None,
        None,
        None,
    )
    assert report["unclassified"] == [
        {"path": "app.py", "line": 6, "column": 1, "cell": None, "source": "np.float64(1)", "library": "numpy",
         "name": "numpy.float64", "method": None},
    ]  # fmt: skip
    assert (report["errors"], report["profile"], report["profile_only"]) == ([], None, [])


def test_json_to_stdout_is_pure_json(app, capsys):
    assert main(["analyze", "app.py", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["sites"] == 3


def test_recommendations_follow_the_seed_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = analyze_json(str(DATA / "aliases.py"), str(DATA / "analysis.ipynb"))
    tiers = {(Path(s["path"]).name, s["cell"], s["line"], s["op"], s["method"]): s["tier"] for s in report["sites"]}
    assert tiers[("aliases.py", None, 12, "dot", None)] == "GPU"  # HIGH, n = 90,000 > 10,000
    assert tiers[("aliases.py", None, 11, "ones", None)] == "SCALAR"  # LOW never leaves the CPU below 1M
    assert tiers[("aliases.py", None, 20, "Linear", "__call__")] == "SIMD"  # MEDIUM, 10,000 < 19,200 <= 100,000
    assert tiers[("aliases.py", None, 15, "PCA", None)] is None  # size unknown
    assert tiers[("analysis.ipynb", 2, 3, "linalg.svd", None)] == "GPU"


def test_examples_report(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "examples.json"
    assert main(["analyze", "examples", "--output", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["summary"]["files"] == 5 and report["summary"]["errors"] == 0
    dot = [s for s in report["sites"] if s["source"] == "np.dot(grid, grid)"]
    assert [(d["size"], d["tier"]) for d in dot] == [(90_000, "GPU")]
    fit = [(s["op"], s["method"], s["tier"]) for s in report["sites"] if s["source"] == "model.fit(X_train, y_train)"]
    assert fit == [
        ("StandardScaler", "fit_transform", "SCALAR"),
        ("PCA", "fit_transform", "GPU"),
        ("LogisticRegression", "fit", "SIMD"),
    ]


# ---- HTML ----------------------------------------------------------------------------------------------


def test_html_is_standalone_with_table_and_chart(app):
    assert main(["analyze", "app.py", "--html", "report.html"]) == 0
    page = Path("report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert '<table class="sortable">' in page and "<th>location</th>" in page
    assert "<td><code>np.dot(A, A)</code></td>" in page
    assert '<td class="num" data-sort="90000">90,000</td>' in page
    assert page.count("<svg") == 1 and page.count("<rect") == 4
    assert "model estimate" in page and "<script>" in page and "<style>" in page
    assert not re.search(r"https?://|<link|src=", page)  # nothing fetched from the network


def test_html_escapes_source(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("x.py").write_text("import numpy as np\nnp.where(a < b, '<b>', 0)\n")
    assert main(["analyze", "x.py", "--html", "x.html"]) == 0
    page = Path("x.html").read_text()
    assert "np.where(a &lt; b, &#x27;&lt;b&gt;&#x27;, 0)" in page and "<b>" not in page


# ---- the profile merge ----------------------------------------------------------------------------------


def test_profile_merge(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "merged.json"
    code = main(["analyze", "tests/data/aliases.py", "--profile", "tests/data/profile.json", "--output", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    profiled = {(s["line"], s["op"]): s["profile"] for s in report["sites"] if s["profile"]}
    assert set(profiled) == {(12, "dot"), (14, "fft.rfft")}
    dot = profiled[(12, "dot")]
    assert set(dot) == PROFILE_KEYS
    # two recorded entries for one site: counts, seconds and the estimates both have are summed
    assert dot["count"] == 4 and dot["seconds"] == pytest.approx(0.02)
    assert dot["shapes"] == [[300, 300], [400, 400]] and dot["dtypes"] == ["float64", "float32"]
    assert dot["estimates"] == pytest.approx({"cupy": 0.004, "numpy": 0.02})
    assert (dot["target"], dot["recommended_target"], dot["speedup"]) == ("numpy", "cupy", pytest.approx(5.0))
    rfft = profiled[(14, "fft.rfft")]  # "aliases.py:14" matched by its trailing path component
    assert (rfft["recommended_target"], rfft["speedup"]) == ("numpy", pytest.approx(1.0))
    assert [(c["site"], c["recommended_target"], c["speedup"]) for c in report["profile_only"]] == [
        ("tests/data/helpers.py:7", "cupy", pytest.approx(12.0))
    ]
    assert report["profile"] == {
        "path": "tests/data/profile.json",
        "machine": {"host": "ci", "gpu": None},
        "calls": 4,
        "matched": 2,
        "unmatched": 1,
    }
    table = capsys.readouterr().out
    assert "n at run  calls  measured  best target  speedup" in table
    # the measured size: elements of the largest input recorded (400 x 400), where the scan saw 300 x 300
    dot_row = next(line for line in table.splitlines() if line.startswith("tests/data/aliases.py:12:"))
    assert dot_row.split()[-12:] == ["90,000", "GPU", "GPU", "229", "µs", "×4.7", "160,000", "4", "20", "ms", "cupy",
                                     "×5.0"]
    assert "profiled calls without a static site:" in table
    assert "tests/data/helpers.py:7  linalg.svd  1,000,000      3    120 ms  numpy   cupy             ×12" in table
    page = tmp_path / "merged.html"
    assert main(["analyze", "tests/data/aliases.py", "--profile", "tests/data/profile.json", "--html", str(page)]) == 0
    html = page.read_text()
    assert "<th>n at run</th>" in html and '<td class="num" data-sort="160000">160,000</td>' in html
    assert '<td class="num" data-sort="1000000">1,000,000</td><td class="num" data-sort="3">3</td>' in html


def test_profile_paths_resolve_against_the_profile_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "proj").mkdir()
    Path("proj/app.py").write_text(APP)
    call = {"site": "app.py:4", "op": "dot", "count": 2, "target": "numpy", "seconds": 1.0}
    Path("proj/profile.json").write_text(json.dumps({"version": 1, "calls": [call]}))
    report = analyze_json("proj", "--profile", "proj/profile.json")
    merged = [s["profile"] for s in report["sites"] if s["profile"]]
    assert merged == [
        {**call, "shapes": [], "dtypes": [], "estimates": {}, "recommended_target": "numpy", "speedup": None,
         "hardware": None}
    ]


def test_sites_sharing_a_line_match_by_op(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("app.py").write_text("import numpy as np\nnp.linalg.svd(np.random.rand(100, 100))\n")
    calls = [
        {"site": "app.py:2", "op": op, "count": 1, "target": "numpy", "seconds": 0.5}
        for op in ("linalg.svd", "random.rand", "matmul")
    ]
    Path("profile.json").write_text(json.dumps({"version": 1, "machine": {}, "calls": calls}))
    report = analyze_json("app.py", "--profile", "profile.json")
    assert [(s["op"], s["profile"]["op"]) for s in report["sites"]] == [
        ("linalg.svd", "linalg.svd"),
        ("random.rand", "random.rand"),
    ]
    assert [c["op"] for c in report["profile_only"]] == ["matmul"]  # two sites on the line, neither is a matmul


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"version": 2, "calls": []}', "has version 2; this dispatch reads version 1"),
        ("[1, 2]", "expected a JSON object"),
        ("{nope", "is not JSON"),
        ('{"version": 1, "calls": [{"site": "a.py:1", "op": "add", "count": 1, "target": "numpy"}]}',
         "calls[0] needs 'seconds' (a number)"),
        ('{"version": 1, "calls": [{"site": "a.py", "op": "add", "count": 1, "target": "numpy", "seconds": 1}]}',
         "calls[0] has site 'a.py'; expected 'path:line'"),
    ],
)  # fmt: skip
def test_bad_profile_is_one_line_exit_1(app, capsys, content, message):
    Path("p.json").write_text(content)
    assert main(["analyze", "app.py", "--profile", "p.json"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dispatch analyze: error: profile p.json") and message in err


# ---- errors and exit codes -------------------------------------------------------------------------------


def test_unparseable_file_is_reported_and_the_rest_analysed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(DATA / "broken.py", "broken.py")
    Path("good.py").write_text(APP)
    report_path = tmp_path / "r.json"
    assert main(["analyze", ".", "--output", str(report_path)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"wrote {report_path}",
        f"dispatch analyze: error: .{os.sep}broken.py:4:12: cannot parse: invalid syntax",
    ]
    report = json.loads(report_path.read_text())
    assert report["summary"]["sites"] == 3
    assert report["errors"] == [
        {
            "path": f".{os.sep}broken.py",
            "line": 4,
            "column": 12,
            "cell": None,
            "message": "cannot parse: invalid syntax",
        }
    ]


def test_command_line_exit_codes_and_one_line_errors(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    broken = subprocess.run(
        [sys.executable, "-m", "dispatch", "analyze", str(DATA / "broken.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert broken.returncode == 1
    assert broken.stderr == f"dispatch analyze: error: {DATA / 'broken.py'}:4:12: cannot parse: invalid syntax\n"
    assert "0 call sites in 1 file" in broken.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "dispatch", "analyze", "nowhere.py"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert (missing.returncode, missing.stderr) == (
        2,
        "dispatch analyze: error: no such file or directory: nowhere.py\n",
    )
    ok = subprocess.run(
        [sys.executable, "-m", "dispatch", "analyze", str(ROOT / "examples" / "numpy_workload.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert (ok.returncode, ok.stderr) == (0, "")
    assert "np.dot(grid, grid)" in ok.stdout


# ---- this machine's calibration and --hardware -----------------------------------------------------------

BIG_DOT = {"site": "app.py:4", "op": "dot", "shapes": [[2000, 2000], [2000, 2000]], "dtypes": ["float64", "float64"],
           "count": 2, "target": "numpy", "seconds": 3.0, "estimates": {"numpy": 3.2}}  # fmt: skip


def test_a_calibrated_machine_prices_sites_with_its_calibration(app, capsys):
    from _synthetic import synthetic

    from dispatch.routing import calibration

    cache = Path(os.environ["DISPATCH_CACHE_DIR"])
    synthetic().save(cache / f"calibration-{calibration.fingerprint()}.json")
    Path("fit.py").write_text("from sklearn.decomposition import PCA\nimport numpy as np\n"
                              "X = np.ones((500, 40))\nPCA(2).fit(X)\n")  # fmt: skip
    report = analyze_json("app.py", "fit.py")
    model = report["estimate_model"]
    assert (model["name"], model["kind"], model["fallback"]) == ("calibration", "model estimate", "seed-roofline")
    assert model["calibration"]["targets"] == ["numpy", "torch-cpu"] and model["calibration"]["quick"] is False
    dot = next(s for s in report["sites"] if s["op"] == "dot")
    assert dot["model_estimate_source"] == "calibration"
    # two 300 x 300 operands: numpy 1 µs + 2e-10 s * 300**3; torch-cpu 5 µs + 0.5e-10 s * 300**3; no GPU here
    assert dot["model_estimate_seconds"] == pytest.approx({"SCALAR": 1e-6 + 5.4e-3, "SIMD": 5e-6 + 1.35e-3}, rel=0.02)
    pca = next(s for s in report["sites"] if s["op"] == "PCA" and s["method"] == "fit")
    assert pca["model_estimate_source"] == "seed-roofline"  # the calibration prices NumPy ops only
    assert set(report["summary"]["model_estimate_seconds_total"]) == {"SCALAR", "SIMD", "GPU", "best"}

    assert main(["analyze", "app.py", "fit.py"]) == 0
    table = capsys.readouterr().out
    assert "SIMD 1.4 ms ×4.0" in table and "SCALAR" in table
    pca_row = next(line for line in table.splitlines() if "PCA(2).fit(X)" in line)
    assert pca_row.endswith(" *")  # priced by the roofline
    assert "Estimates: this machine's calibration (full, 2026-11-22T00:00:00+00:00), data on the host; *" in table


def test_hardware_prices_profiled_calls_on_the_other_machine(app, capsys):
    from _synthetic import synthetic

    from dispatch.cli._pricing import price_call

    gpu = synthetic(gpu=True, fingerprint="feedfacefeedface")
    gpu.save("gpu.json")
    unsized = {"site": "app.py:5", "op": "sum", "count": 1, "target": "numpy", "seconds": 0.1}
    Path("p.json").write_text(json.dumps({"version": 1, "machine": {}, "calls": [BIG_DOT, unsized]}))
    report = analyze_json("app.py", "--profile", "p.json", "--hardware", "gpu.json")
    assert report["hardware"] == {
        "fingerprint": "feedfacefeedface", "path": "gpu.json", "created": "2026-11-22T00:00:00+00:00",
        "quick": False, "cpu": "Synthetic CPU", "gpus": ["Synthetic GPU"], "targets": ["cupy", "numpy", "torch-cpu"],
        "baseline": "numpy",
    }  # fmt: skip
    per_call = price_call("dot", BIG_DOT["shapes"], BIG_DOT["dtypes"], gpu)
    dot = next(s for s in report["sites"] if s["op"] == "dot")["profile"]
    assert dot["hardware"]["estimates"] == pytest.approx({t: 2 * s for t, s in per_call.items()})
    assert dot["hardware"]["recommended_target"] == "cupy"
    assert dot["hardware"]["speedup"] == pytest.approx(per_call["numpy"] / per_call["cupy"])
    assert dot["hardware"]["speedup"] > 20  # 100x faster compute, less the transfers of 2 x 32 MB at 10 GB/s
    assert (dot["recommended_target"], dot["speedup"]) == ("numpy", pytest.approx(1.0))  # this machine: unchanged
    total = next(s for s in report["sites"] if s["op"] == "sum")["profile"]
    assert total["hardware"] == {"estimates": {}, "recommended_target": None, "speedup": None}  # no shapes

    assert main(["analyze", "app.py", "--profile", "p.json", "--hardware", "gpu.json"]) == 0
    table = capsys.readouterr().out
    assert "best target  speedup  best there  speedup there" in table
    dot_row = next(line for line in table.splitlines() if line.startswith("app.py:4:5"))
    assert dot_row.split()[-2:] == ["cupy", f"×{per_call['numpy'] / per_call['cupy']:,.0f}"]
    assert dot_row.split()[-2:] != ["-", "-"]
    assert "there: the calibration gpu.json (Synthetic CPU; Synthetic GPU; full, 2026-11-22T00:00:00+00:00)" in table


def test_hardware_errors_are_one_line(app, capsys):
    Path("p.json").write_text(json.dumps({"version": 1, "calls": [BIG_DOT]}))
    Path("bad.json").write_text('{"version": 7}')
    for args, code, message in (
        (["--hardware", "gpu.json"], 2, "--hardware prices the calls of a profile: give --profile FILE too"),
        (["--profile", "p.json", "--hardware", "none.json"], 2, "no such calibration: none.json"),
        (["--profile", "p.json", "--hardware", "bad.json"], 1, "cannot read calibration bad.json: not a usable"),
    ):
        assert main(["analyze", "app.py", *args]) == code
        err = capsys.readouterr().err
        assert err.startswith(f"dispatch analyze: error: {message}") and err.count("\n") == 1


def test_calls_without_estimates_do_not_hide_the_others(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("app.py").write_text("import numpy as np\ny = np.sin(x)[0] * 2\n")
    calls = [
        {"site": "app.py:2", "op": "sin", "count": 1, "target": "numpy", "seconds": 0.4,
         "estimates": {"numpy": 0.4, "torch-cpu": 0.1}},
        {"site": "app.py:2", "op": "multiply", "count": 2, "target": "numpy", "seconds": 0.2,
         "estimates": {"numpy": 0.2, "torch-cpu": 0.1}},
        {"site": "app.py:2", "op": "__getitem__", "count": 1, "target": "numpy", "seconds": 0.01, "estimates": {}},
    ]  # fmt: skip
    Path("p.json").write_text(json.dumps({"version": 1, "calls": calls}))
    report = analyze_json("app.py", "--profile", "p.json")
    merged = report["sites"][0]["profile"]  # the line's one static site takes every call on it
    assert (merged["count"], merged["seconds"]) == (4, pytest.approx(0.61))
    assert merged["estimates"] == pytest.approx({"numpy": 0.6, "torch-cpu": 0.2})
    assert (merged["recommended_target"], merged["speedup"]) == ("torch-cpu", pytest.approx(3.0))


# ---- the tiers a machine has --------------------------------------------------------------------------


def test_no_gpu_tier_is_named_on_a_machine_without_one(app, capsys, monkeypatch):
    monkeypatch.setattr(_pricing, "tiers_here", lambda: {Backend.SCALAR, Backend.SIMD})
    report = analyze_json("app.py")
    dot = next(s for s in report["sites"] if s["op"] == "dot")
    assert dot["tier"] == "SIMD"  # the seed's table says GPU: the next tier down that this machine has
    assert list(dot["model_estimate_seconds"]) == ["SCALAR", "SIMD"]
    assert report["summary"]["tiers"]["GPU"] == 0
    assert main(["analyze", "app.py"]) == 0
    table = capsys.readouterr().out
    assert "GPU" not in table.replace("0 GPU", "")
    assert "Tier: the seed's MoE table among the tiers here (SCALAR, SIMD)." in table
    monkeypatch.setattr(_pricing, "tiers_here", lambda: {Backend.SCALAR})
    dot = next(s for s in analyze_json("app.py")["sites"] if s["op"] == "dot")
    assert (dot["tier"], list(dot["model_estimate_seconds"])) == ("SCALAR", ["SCALAR"])


def test_hardware_with_a_gpu_brings_the_gpu_tier_back(app, monkeypatch):
    from _synthetic import synthetic

    monkeypatch.setattr(_pricing, "tiers_here", lambda: {Backend.SCALAR})
    synthetic(gpu=True, fingerprint="feedfacefeedface").save("gpu.json")
    Path("p.json").write_text(json.dumps({"version": 1, "machine": {}, "calls": [BIG_DOT]}))
    dot = next(s for s in analyze_json("app.py", "--profile", "p.json", "--hardware", "gpu.json")["sites"]
               if s["op"] == "dot")
    assert dot["tier"] == "GPU"
    # this machine calibrated, without a GPU: its estimates price no GPU, the tier still names it
    from dispatch.routing import calibration

    monkeypatch.setattr(_pricing, "tiers_here", lambda: {Backend.SCALAR, Backend.SIMD})
    synthetic(gpu=False).save(Path(os.environ["DISPATCH_CACHE_DIR"]) / f"calibration-{calibration.fingerprint()}.json")
    sites = analyze_json("app.py", "--profile", "p.json", "--hardware", "gpu.json")["sites"]
    dot = next(s for s in sites if s["op"] == "dot")
    assert dot["tier"] == "GPU" and "GPU" not in dot["model_estimate_seconds"]


def test_tiers_here_are_those_of_the_available_targets():
    from dispatch import targets

    found = targets.available()
    tiers = TIERS_HERE()  # the real one: the other tests fake a machine with every tier
    assert tiers == {Backend.SCALAR} | {t.tier for t in found.values()}
    assert (Backend.GPU in tiers) == any(t.tier is Backend.GPU for t in found.values())


def test_a_disturbed_large_product_does_not_slow_larger_ones():
    from _synthetic import synthetic

    from dispatch.cli._pricing import price_call

    cal = synthetic(gpu=False, fingerprint="feedfacefeedface")
    numpy_curve = cal.targets["numpy"]["ops"]["float64"]["matmul"]
    numpy_curve[-1][1] *= 10  # 1024: another process had the cores
    priced = price_call("matmul", [[2048, 2048], [2048, 2048]], ["float64"] * 2, cal)["numpy"]
    assert priced == pytest.approx(1e-6 + 2 * 2048**3 / 1e10)  # the rate measured at 256
