"""Where a workload's run spends its time, statement by statement: NumPy against dispatch.

    python -m benchmarks.statements pairwise [monte_carlo ...] [--size small] [--rounds 300]

Each program's ``run`` is compiled again with a clock read after every statement of its body
(and of the loops in it, which add up over their iterations); the router first runs it until it
has settled, as the suite does (``suite._learn_router``). Then NumPy and dispatch take turns, one
run each, ``--rounds`` times. Printed: the median run of each and the median of each turn's
ratio, then each statement's median time under both, with what dispatch adds. A statement that
makes several calls shows their sum: this says which lines cost, ``route_trace`` which calls
ran where and why.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import statistics
import textwrap
import time
from typing import Any

import numpy

import dispatch
from benchmarks.suite import _learn_router
from benchmarks.workloads import SIZE_NAMES, get

__all__ = ["Statements", "measure", "stamped"]


class Statements(ast.NodeTransformer):
    """Adds ``_T[i] += _pc() - _T0[0]; _T0[0] = _pc()`` after each statement of a function's
    body and of the loops, conditions and ``with`` blocks in it; a ``return`` value is computed
    first, so that its work is a statement of its own."""

    def __init__(self) -> None:
        self.labels: list[str] = []

    def _stamp(self, label: str) -> list[ast.stmt]:
        self.labels.append(label)
        i = len(self.labels) - 1
        return ast.parse(f"_T[{i}] += _pc() - _T0[0]; _T0[0] = _pc()").body

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in body:
            if isinstance(st, ast.Return) and st.value is not None:
                label = "return " + ast.unparse(st.value).splitlines()[0]
                out.append(ast.Assign(targets=[ast.Name("_R", ast.Store())], value=st.value))
                out.extend(self._stamp(label))
                out.append(ast.parse("return _R").body[0])
                continue
            if isinstance(st, (ast.For, ast.While, ast.If, ast.With)):
                st.body = self._body(st.body)
            out.append(st)
            out.extend(self._stamp(ast.unparse(st).splitlines()[0]))
        return out

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.body = ast.parse("_T0[0] = _pc()").body + self._body(node.body)
        return node


def stamped(workload: Any) -> tuple[Any, list[float], list[str]]:
    """``workload.run`` with a clock after each statement: the function, the list its statements'
    seconds add up in (set it to zeros before a run), and each statement's first line."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(workload.run)))
    stamper = Statements()
    tree = ast.fix_missing_locations(stamper.visit(tree))
    namespace = dict(vars(workload))
    seconds = [0.0] * len(stamper.labels)
    namespace.update(_pc=time.perf_counter, _T=seconds, _T0=[0.0])
    exec(compile(tree, f"<{workload.NAME}, stamped>", "exec"), namespace)
    return namespace["run"], seconds, stamper.labels


def measure(name: str, size: str = "small", rounds: int = 300) -> dict[str, Any]:
    """Each statement's median seconds under NumPy and dispatch, taking turns run by run."""
    workload = get(name)
    data = workload.make_data(size)
    runs = {}
    for xp in (numpy, dispatch):
        run, seconds, labels = stamped(workload)
        runs[xp.__name__] = (xp, run, seconds)
    learned = _learn_router(lambda: runs["dispatch"][1](dispatch, **data))
    for _ in range(10):
        runs["numpy"][1](numpy, **data)
    totals: dict[str, list[float]] = {m: [] for m in runs}
    per: dict[str, list[list[float]]] = {m: [] for m in runs}
    for r in range(rounds):
        for mode in ("numpy", "dispatch") if r % 2 else ("dispatch", "numpy"):
            xp, run, seconds = runs[mode]
            seconds[:] = [0.0] * len(seconds)
            start = time.perf_counter()
            run(xp, **data)
            totals[mode].append(time.perf_counter() - start)
            per[mode].append(list(seconds))
    median = statistics.median
    return {
        "workload": name, "size": size, "rounds": rounds, "learning": learned,
        "numpy_s": median(totals["numpy"]), "dispatch_s": median(totals["dispatch"]),
        "paired": median(d / n for d, n in zip(totals["dispatch"], totals["numpy"], strict=True)),
        "statements": [{"line": label, "numpy_s": median(p[i] for p in per["numpy"]),
                        "dispatch_s": median(p[i] for p in per["dispatch"])} for i, label in enumerate(labels)],
    }


def report(result: dict[str, Any], width: int = 72) -> str:
    lines = [f"{result['workload']} {result['size']}: NumPy {result['numpy_s'] * 1e6:.0f} µs, dispatch "
             f"{result['dispatch_s'] * 1e6:.0f} µs a run; dispatch / NumPy {result['paired']:.3f} "
             f"(the median of {result['rounds']} turns' ratios)",
             f"  {'NumPy µs':>9} {'dispatch':>9} {'added':>8}  statement"]
    for st in result["statements"]:
        a, b = st["numpy_s"] * 1e6, st["dispatch_s"] * 1e6
        lines.append(f"  {a:9.1f} {b:9.1f} {b - a:+8.1f}  {st['line'][:width]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="+")
    parser.add_argument("--size", default="small", choices=SIZE_NAMES)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args(argv)
    for name in args.workloads:
        print(report(measure(name, args.size, args.rounds)))


if __name__ == "__main__":
    main()
