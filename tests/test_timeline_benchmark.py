"""``benchmarks/timeline.py``: a fresh process watched says where its seconds went."""

from __future__ import annotations

import sys

from benchmarks import timeline


def test_a_watched_process_reports_its_phases_imports_and_routed_calls(tmp_path):
    code = "import numpy; import dispatch as np; print(float(np.add(np.arange(4.0), 1.0).sum()))"
    done, seen = timeline.run([sys.executable, "-c", code], env={**timeline.os.environ,
                                                                "DISPATCH_CACHE_DIR": str(tmp_path)})
    assert done is not None and done.returncode == 0, seen
    assert done.stdout.strip() == "10.0"
    assert "import time:" not in seen["stderr_tail"]  # the import timer's lines are taken out
    assert {"numpy", "dispatch"} <= set(seen["imports"])
    assert 0 < seen["start"] < seen["wall"] and 0 < seen["main"] < seen["wall"] and seen["exit"] >= 0
    assert abs(seen["start"] + seen["main"] + seen["exit"] - seen["wall"]) < 1e-6
    assert "add" in [c["op"] for c in seen["calls"]]
    assert all(c["target"] == "numpy" for c in seen["calls"])
    assert "on numpy" in timeline.describe(seen)


def test_the_import_timer_lines_are_summed_by_top_level_package():
    err = ("import time: self [us] | cumulative | imported package\n"
           "import time:       100 |        100 |   numpy.core\n"
           "import time:      2000 |     500000 | numpy\n"
           "import time:        10 |     250000 | sklearn.utils\n"
           "a warning\n")
    by, rest = timeline.parse_imports(err)
    assert by == {"numpy": 0.5, "sklearn": 0.25}
    assert rest == "a warning"
