"""The README's benchmark table is what ``benchmarks.readme_table`` writes from the suite's
result files: no figure in it is typed by hand."""

from __future__ import annotations

import json

from benchmarks import readme_table


def test_the_readme_table_is_the_suite_files():
    assert readme_table.main(["--check"]) == 0


def _suite(path, size: str, numpy: float, router: float, gpu: str | None = "NVIDIA H200") -> None:
    cases = [{"workload": "w", "size": size, "seconds": {"numpy": numpy, "router": router, "always-gpu": 1.0,
                                                         "port": 2.0}}]  # fmt: skip
    machine = {"gpus": [{"name": gpu}] if gpu else [], "cpu_count": 2}
    path.write_text(json.dumps({"machine": machine, "calibration": {"quick": False}, "cases": cases}))


def test_the_table_is_rewritten_from_the_files(tmp_path):
    small, large = tmp_path / "gpu-suite-small-abc.json", tmp_path / "gpu-suite-large-abc.json"
    cpu = tmp_path / "c.json"
    _suite(small, "small", 0.010, 0.004)
    _suite(large, "large", 1.000, 0.125)
    _suite(cpu, "small", 1.0, 0.8, gpu=None)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{readme_table.BEGIN}\nold\n{readme_table.END}\n\nafter\n")
    args = ["--gpu", str(small), str(large), "--cpu", str(cpu), "--readme", str(readme)]
    assert readme_table.main([*args, "--check"]) == 1
    assert readme_table.main(args) == 0
    text = readme.read_text()
    assert "(H200 machine, one full calibration)" in text and text.endswith(f"{readme_table.END}\n\nafter\n")
    assert "| | small | large | whole suite |" in text
    assert "| NumPy | 10.0 | 1000.0 | 1010.0 |" in text and "| dispatch | 4.0 | 125.0 | **129.0** |" in text
    assert "On a 2-core machine without a GPU the same suite took 0.80x NumPy's time." in text
    assert readme_table.main([*args, "--check"]) == 0
