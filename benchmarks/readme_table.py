"""The README's benchmark table, written from the suite's result files, never by hand.

``benchmarks.suite --out FILE`` measures the ten NumPy programs (NumPy, the router, every call
on the GPU, the hand port to CuPy) and writes each size's figures; this script sums them by
size and rewrites the table between the README's ``readme-table`` markers, with the machine
and calibration the files name, and the sentence on the CPU machine's suite.

    python -m benchmarks.suite --sizes small --out results/gpu-suite-small.json   # on each machine, each size
    python -m benchmarks.readme_table [--gpu FILE ...] [--cpu FILE] [--check]

``--check`` rewrites nothing and exits 1 where the README differs from the files (a test
runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RESULTS = Path(__file__).resolve().parent / "results"
GPU_SUITE = tuple(RESULTS / f"h200-suite-{size}-7097130.json" for size in ("small", "medium", "large-a", "large-b"))
CPU_SUITE = RESULTS / "cpu-suite-7097130.json"
BEGIN, END = "<!-- readme-table: begin -->", "<!-- readme-table: end -->"
# The suite's strategies shown, and their names in the README.
ROWS = (("numpy", "NumPy"), ("router", "dispatch"), ("always-gpu", "every call on the GPU"),
        ("port", "hand port to CuPy"))  # fmt: skip


def totals(result: dict) -> dict[str, float]:
    """Milliseconds a run of each strategy, summed over the file's programs."""
    summed: dict[str, float] = {}
    for case in result["cases"]:
        for strategy, seconds in case["seconds"].items():
            summed[strategy] = summed.get(strategy, 0.0) + seconds * 1e3
    return summed


def _size(result: dict, path: Path) -> str:
    sizes = {case["size"] for case in result["cases"]}
    name = sizes.pop() if len(sizes) == 1 else "mixed"
    part = path.stem.split("-suite-")[-1].rsplit("-", 1)[0]  # large-a, large-b: one size in two runs
    return part if part.startswith(name) else name


def _machine(result: dict) -> str:
    gpus = sorted({g["name"].removeprefix("NVIDIA ") for g in result["machine"].get("gpus", [])})
    calibration = result.get("calibration") or {}
    kind = "one quick calibration" if calibration.get("quick") else "one full calibration"
    return f"{' + '.join(gpus) or 'CPU'} machine, {kind}"


def render(gpu_files: list[Path], cpu_file: Path) -> str:
    """The README's section between the markers."""
    results = [(path, json.loads(path.read_text())) for path in gpu_files]
    columns = [(_size(result, path), totals(result)) for path, result in results]
    machines = sorted({_machine(result) for _, result in results})
    lines = [
        "Milliseconds a run, summed over ten NumPy programs by size, data starting and ending on the",
        f"host, every output equal to NumPy's ({'; '.join(machines)}):",
        "",
        "| | " + " | ".join(size for size, _ in columns) + " | whole suite |",
        "| --- | " + " | ".join("---" for _ in columns) + " | --- |",
    ]
    for strategy, label in ROWS:
        cells = [f"{summed[strategy]:.1f}" for _, summed in columns]
        whole = f"{sum(summed[strategy] for _, summed in columns):.1f}"
        whole = f"**{whole}**" if strategy == "router" else whole
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {whole} |")
    cpu = json.loads(cpu_file.read_text())
    summed = totals(cpu)
    cores = cpu["machine"].get("cpu_count")
    lines += ["", f"On a {cores}-core machine without a GPU the same suite took "
                  f"{summed['router'] / summed['numpy']:.2f}x NumPy's time."]
    return "\n".join(lines)


def rewrite(text: str, section: str) -> str:
    """``text`` with the section between the markers replaced."""
    head, begin, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"readme_table: {README.name} has no {BEGIN} ... {END} section")
    return f"{head}{BEGIN}\n{section}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", nargs="+", type=Path, default=list(GPU_SUITE), help="the GPU machine's suite files")
    parser.add_argument("--cpu", type=Path, default=CPU_SUITE, help="the CPU machine's suite file")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--check", action="store_true", help="exit 1 where the README differs; write nothing")
    args = parser.parse_args(argv)
    text = args.readme.read_text()
    updated = rewrite(text, render(args.gpu, args.cpu))
    if args.check:
        if updated != text:
            print(f"readme_table: {args.readme.name}'s table differs from the suite's files: "
                  "run `python -m benchmarks.readme_table`", file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
