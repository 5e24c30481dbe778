"""What ``import dispatch`` adds to ``import numpy``, in fresh processes.

    python -m benchmarks.import_cost [--repeats 15]

Each repeat runs two fresh interpreters, ``python -X importtime -c "import numpy"`` and
``python -X importtime -c "import numpy; import dispatch"``, in alternating order, and reads
the cumulative microseconds of the top-level imports from ``-X importtime``'s report. The cost
of dispatch is the second's ``dispatch`` line (NumPy is already loaded when it starts), and the
wall time of the two processes is given too. Best of the repeats: on a shared machine the
smallest time is the one least disturbed. It also lists the modules ``import dispatch`` loads
that ``import numpy`` does not, and any file dispatch opens meanwhile (there should be none).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _top_level(stderr: str) -> dict[str, int]:
    """Cumulative microseconds of each top-level import in an ``-X importtime`` report."""
    found = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if name.startswith(" ") and not name.startswith("  "):
            try:
                found[name.strip()] = int(cumulative)
            except ValueError:
                continue
    return found


def _run(code: str) -> tuple[float, dict[str, int]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - start, _top_level(done.stderr)


def measure(repeats: int) -> dict[str, float]:
    """Best of ``repeats``: ``dispatch`` (its own import, ms), and each process's wall time (ms)."""
    best = {"dispatch_ms": float("inf"), "numpy_wall_ms": float("inf"), "both_wall_ms": float("inf")}
    for r in range(repeats):
        order = ("numpy", "both") if r % 2 == 0 else ("both", "numpy")
        for which in order:
            wall, tops = _run("import numpy" if which == "numpy" else "import numpy; import dispatch")
            best[f"{which}_wall_ms"] = min(best[f"{which}_wall_ms"], wall * 1e3)
            if which == "both":
                best["dispatch_ms"] = min(best["dispatch_ms"], tops.get("dispatch", 0) / 1e3)
    return best


def extra_modules() -> list[str]:
    """The modules ``import dispatch`` loads beyond those of ``import numpy``."""
    code = ("import sys, numpy; before = set(sys.modules); import dispatch; "
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.split()


def files_opened() -> list[str]:
    """Files opened while ``import dispatch`` runs, other than Python modules (by an audit hook)."""
    code = ("import sys, numpy; seen = []\n"
            "def hook(event, args):\n"
            "    if event == 'open' and isinstance(args[0], str) and not args[0].endswith(('.py', '.pyc', '.so')):\n"
            "        seen.append(args[0])\n"
            "sys.addaudithook(hook); import dispatch; print('\\n'.join(p for p in seen if 'pycache' not in p))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return [p for p in done.stdout.splitlines() if p and not os.path.isdir(p)]


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    best = measure(args.repeats)
    extra = [m for m in extra_modules() if not m.startswith("dispatch")]
    opened = files_opened()
    print(f"import dispatch after numpy (-X importtime, best of {args.repeats}): {best['dispatch_ms']:.1f} ms")
    print(f"fresh process wall time: numpy {best['numpy_wall_ms']:.0f} ms, numpy + dispatch "
          f"{best['both_wall_ms']:.0f} ms (best of {args.repeats})")
    print(f"other modules it loads: {', '.join(extra) or 'none'}")
    print(f"files it reads: {', '.join(opened) or 'none'}")
    return {**best, "extra_modules": extra, "files": opened}


if __name__ == "__main__":
    main()
