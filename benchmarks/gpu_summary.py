"""The short table printed last by ``benchmarks/gpu_run.sh``: one line per step's figures,
read back from the files the steps wrote (a step that did not run is left out).

    python -m benchmarks.gpu_summary OUT_DIR
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def tests_line(out: Path) -> str | None:
    try:
        root = ET.parse(out / "tests.xml").getroot()
    except (OSError, ET.ParseError):
        return None
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return None
    total, failures, errors, skipped = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
    gpu = sum(1 for case in suite.iter("testcase") if "gpu" in case.get("name", "") and case.find("skipped") is None)
    return (f"tests      {total - failures - errors - skipped} passed, {failures} failed, {errors} errors, "
            f"{skipped} skipped ({gpu} GPU-parametrised ran)")


def calibration_line(out: Path) -> str | None:
    cal = _load(out / "calibration.json")
    if not cal:
        return None
    parts = []
    for name, data in cal.get("targets", {}).items():
        gemm = data.get("gemm", {}).get("float32") or data.get("gemm", {}).get("float64") or []
        rate = max((r for _, r in gemm), default=0.0)
        parts.append(f"{name} {rate / 1e12:.2f} TFLOP/s")
    line = f"calibrate  {cal.get('seconds', 0):.1f} s (the command {_command_seconds(out / 'calibration.txt')} s); " \
        "best GEMM: " + ", ".join(parts)
    quick = _load(out / "calibration-quick.json")
    command = _command_seconds(out / "calibration-quick.txt")
    return line + (f"; quick {quick.get('seconds', 0):.1f} s (the command {command} s)" if quick else "")


def _command_seconds(timed: Path) -> str:
    """The seconds in a line ``gpu_run.sh`` wrote as "...: the command 6.25 s", or "?"."""
    return timed.read_text().split()[-2] if timed.exists() else "?"


def overhead_line(out: Path) -> str | None:
    data = _load(out / "overhead.json")
    if not data:
        return None
    return (f"overhead   median {data['median_overhead_us']:.2f} µs per call over NumPy; "
            f"decision cache hit {data['decision']['cache_hit_us']:.2f} µs")


def transfers_line(out: Path) -> str | None:
    data = _load(out / "transfers.json")
    if not data:
        return None
    parts = []
    for name, rows in data.items():
        big = rows[-1]
        parts.append(f"{name} {big['MB']} MB in {big['to_device_staged_GBs']:.1f} vs {big['to_device_plain_GBs']:.1f} "
                     f"GB/s, out {big['to_host_staged_GBs']:.1f} vs {big['to_host_plain_GBs']:.1f} GB/s")
    return "transfers  staged vs plain: " + "; ".join(parts)


def suite_lines(out: Path) -> list[str]:
    data = _load(out / "suite.json")
    if not data:
        return []
    return ["suite      " + line for line in data.get("summary", []) if "total" in line or "worst" in line
            or "equal" in line]


def sklearn_lines(out: Path) -> list[str]:
    data = _load(out / "sklearn.json")
    if not data:
        return []
    return [f"sklearn    {r['workload']:<50} x{r['speedup']:6.2f}  agree {'yes' if r['outputs_agree'] else 'NO'}"
            for r in data.get("results", [])]


def named_summary(out: Path, name: str, label: str) -> list[str]:
    data = _load(out / f"{name}.json")
    if not data:
        return []
    return [f"{label:<11}{line}" for line in data.get("summary", [])]


def main(argv: list[str] | None = None) -> int:
    out = Path((argv or sys.argv[1:] or ["gpu-results"])[0])
    lines = [line for line in (tests_line(out), calibration_line(out), overhead_line(out), transfers_line(out))
             if line]
    lines += suite_lines(out) + sklearn_lines(out) + named_summary(out, "dask", "dask")
    print("\n".join(lines) if lines else f"nothing measured under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
