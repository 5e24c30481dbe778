"""``python -m benchmarks.workloads``: run the workloads under NumPy and every hand port this
machine can run, check each port against NumPy, and print median times side by side.

Ratios are NumPy's time over the port's: above 1 the port is faster. For device ports, "rt"
is the round trip (host inputs, host results) and "res" the computation on resident data.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from types import ModuleType
from typing import Any

import numpy

from benchmarks.workloads import SIZE_NAMES, WORKLOADS, _ports, _timing, iter_cases


def _on_host(port: _ports.Port) -> bool:
    return port.device is not None and port.device.type == "cpu"


def _columns(ports: list[_ports.Port]) -> list[str]:
    names = ["numpy"]
    for port in ports:
        names += [port.name] if _on_host(port) else [f"{port.name} rt", f"{port.name} res"]
    return names


def _cell(seconds: float | None, numpy_seconds: float | None = None) -> str:
    if seconds is None:
        return "–"
    ms = seconds * 1e3
    text = f"{ms:,.1f}" if ms >= 10 else f"{ms:.2f}"
    return text if numpy_seconds is None else f"{text} ({numpy_seconds / seconds:.2f}×)"


def bench_case(
    workload: ModuleType, size: str, ports: list[_ports.Port], *, seed: int = 0, repeats: int = 5, clock: str = "wall"
) -> tuple[dict[str, list[float]], list[str]]:
    """Timings (seconds, by column name) of one case, and the ports whose check failed.

    Every contender is checked against NumPy first; those that pass are timed in turns.
    """
    data = workload.make_data(size, seed=seed)
    reference = workload.run(numpy, **data)
    calls = {"numpy": (functools.partial(workload.run, numpy, **data), None)}
    failures = []
    for port in ports:
        if not port.supports(workload):
            continue
        try:
            workload.check(port.run(workload, data), reference)
        except AssertionError as exc:
            failures.append(f"{port.name}: {exc}")
            continue
        roundtrip = functools.partial(port.run, workload, data)
        calls[port.name if _on_host(port) else f"{port.name} rt"] = (roundtrip, port.synchronize)
        if not _on_host(port):
            resident = functools.partial(port.run_resident, workload, port.to_device(data))
            calls[f"{port.name} res"] = (resident, port.synchronize)
    return _timing.measure_interleaved(calls, repeats=repeats, clock=clock), failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.workloads", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=[*SIZE_NAMES, "all"], default="small")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=[w.NAME for w in WORKLOADS])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ports", action="store_true", help="time NumPy only")
    parser.add_argument(
        "--clock",
        choices=sorted(_timing.CLOCKS),
        default="wall",
        help="cpu: process CPU time, for one-thread runs on a loaded machine (host ports only)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every timing (seconds) to PATH")
    args = parser.parse_args(argv)

    ports = [] if args.no_ports else _ports.available_ports()
    if args.clock == "cpu":
        ports = [port for port in ports if _on_host(port)]  # device time is not process CPU time
    columns = _columns(ports)
    ports_text = ", ".join(p.name for p in ports) or "none"
    print(f"numpy {numpy.__version__}; ports: {ports_text}; clock: {args.clock}")
    print("| workload | size | " + " | ".join(f"{c} ms" for c in columns) + " |")
    print("| --- | --- |" + " --- |" * len(columns))

    sizes = SIZE_NAMES if args.size == "all" else (args.size,)
    failures: list[str] = []
    records: list[dict[str, Any]] = []
    for workload, size in iter_cases(sizes, args.only):
        timings, failed = bench_case(workload, size, ports, seed=args.seed, repeats=args.repeats, clock=args.clock)
        failures += [f"{workload.NAME} {size} {f}" for f in failed]
        medians = {k: _timing.median(v) for k, v in timings.items()}
        cells = [_cell(medians["numpy"])]
        for column in columns[1:]:
            failed_here = any(f.startswith(column.split(" ")[0] + ":") for f in failed)
            cells.append("FAIL" if failed_here else _cell(medians.get(column), medians["numpy"]))
        print(f"| {workload.NAME} | {size} | " + " | ".join(cells) + " |", flush=True)
        records.append({"workload": workload.NAME, "size": size, "seconds": timings})

    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            meta = {"numpy": numpy.__version__, "ports": [p.name for p in ports], "clock": args.clock}
            json.dump({**meta, "cases": records}, fh, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
