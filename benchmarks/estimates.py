"""How far the model's estimates are from measured time, on the example programs.

Each example runs under ``dispatch run --profile`` (a quick calibration measured first where
the machine has none); for every profiled call over ``--min-ms`` of measured time that the
calibration priced on the target it ran on, the estimate is divided by the measured time.

    python -m benchmarks.estimates [--out results.json] [--min-ms 1] [examples/numpy_workload.py ...]

Target (the issues'): every such call within 3x of its measured time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("examples/numpy_workload.py", "examples/numpy_program.py", "examples/sklearn_pipeline.py")
WITHIN = 3.0


def ratios(profile: dict, min_seconds: float) -> list[dict]:
    """Per profiled call measured over ``min_seconds`` and priced on its own target: the
    estimate over the measured time (both totals over the call's count)."""
    rows = []
    for call in profile["calls"]:
        estimate = call["estimates"].get(call["target"])
        if call["seconds"] < min_seconds or not estimate:
            continue
        rows.append({"site": call["site"], "op": call["op"], "target": call["target"], "count": call["count"],
                     "measured": call["seconds"], "estimate": estimate, "ratio": estimate / call["seconds"]})
    return rows


def within(rows: list[dict], factor: float = WITHIN) -> int:
    """How many calls' estimates lie within ``factor`` of their measured time, either way."""
    return sum(1 / factor <= r["ratio"] <= factor for r in rows)


def profile_of(script: str, folder: str) -> dict:
    out = os.path.join(folder, Path(script).stem + ".json")
    subprocess.run([sys.executable, "-m", "dispatch", "run", "--calibrate", "--profile", out, script],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(Path(out).read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", default=list(EXAMPLES))
    parser.add_argument("--min-ms", type=float, default=1.0, help="calls measured under this are left out")
    parser.add_argument("--out", help="write every call's figures as JSON")
    args = parser.parse_args()
    found: list[dict] = []
    with tempfile.TemporaryDirectory() as folder:
        for script in args.scripts:
            rows = ratios(profile_of(script, folder), args.min_ms / 1e3)
            found += rows
            for r in sorted(rows, key=lambda r: -r["measured"]):
                print(f"{r['site']:<36} {r['op']:<24} {r['target']:<10} {r['count']:>5} "
                      f"measured {r['measured'] * 1e3:9.2f} ms  estimate {r['estimate'] * 1e3:9.2f} ms  "
                      f"x{r['ratio']:.2f}")
    print(f"{within(found)} of {len(found)} calls over {args.min_ms:g} ms estimated within {WITHIN:g}x "
          "of their measured time")
    if args.out:
        Path(args.out).write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
