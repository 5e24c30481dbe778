"""Ops: a NumPy callable with what the router needs to know of it, built once from the
NumPy catalog (``dispatch.base.numpy_catalog``) and cached.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from dispatch.base.blas_spin import BLAS_WORK
from dispatch.base.numpy_catalog import NUMPY_CATALOG, may_differ
from dispatch.base.tiers import OpComplexity

__all__ = ["FFT_1D", "GETITEM", "POWER_OPERATOR", "SETITEM", "Op", "made_at_run_time", "op_for_function",
           "op_for_ufunc_method", "op_named"]

# Functions that write into one of their arguments: the argument's position.
MUTATES = {
    "copyto": 0,
    "put": 0,
    "place": 0,
    "putmask": 0,
    "fill_diagonal": 0,
    "put_along_axis": 0,
    "random.shuffle": 0,
}

# One-dimensional transforms: given ``n``, their work follows it, not their input's size (the call
# path's floors and keys, and the cost model's pricing of a batch of short transforms).
FFT_1D = frozenset({"fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft"})

# Ops that run where their data is, whatever its size.
LOCAL = frozenset({
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite", "require",
    "astype", "copy", "real_if_close", "trim_zeros",
    "fill_diagonal", "diag", "tril", "triu", "zeros_like", "ones_like", "empty_like", "full_like",
})

# ufunc methods other than __call__: (complexity, work)
_UFUNC_METHODS = {
    "reduce": (OpComplexity.MEDIUM, "reduce"),
    "accumulate": (OpComplexity.MEDIUM, "scan"),
    "reduceat": (OpComplexity.MEDIUM, "reduce"),
    "outer": (OpComplexity.MEDIUM, "map"),
    "at": (OpComplexity.LOW, "map"),
}


class Op:
    """One routable operation (equal only to itself).

    ``name`` is the catalog name (``"add"``, ``"linalg.svd"``) or, for a ufunc method,
    ``"add.reduce"``; ``func`` is what NumPy calls for it.
    """

    __slots__ = ("blas", "cache", "cataloged", "complexity", "differs", "floor", "func", "local", "method", "mutates",
                 "name", "trip_floor", "ufunc", "work")

    def __init__(self, name: str, func: Callable[..., Any], complexity: OpComplexity, work: str,
                 ufunc: np.ufunc | None = None, method: str = "__call__", mutates: int | None = None,
                 cataloged: bool = True, local: bool = False, floor: int = -1, trip_floor: int = -1) -> None:
        self.name = name
        self.func = func
        self.complexity = complexity
        self.work = work
        self.ufunc = ufunc
        self.method = method
        self.mutates = mutates
        self.cataloged = cataloged
        # Runs where its first array lives: views, casts, copies and indexing move no data.
        self.local = local
        # Sizes at or under this run on NumPy without routing (-1: not computed yet; see router).
        self.floor = floor
        # Host arrays at or under this run on NumPy too: the floor, raised where NumPy was measured
        # best above it (-1: not computed yet; see router.trip_floor).
        self.trip_floor = trip_floor
        # Per-target state the adapters keep (resolved implementation, refusal reasons).
        self.cache: dict[Any, Any] = {}
        # NumPy hands it to its BLAS, whose threads spin after it: every path that runs it on NumPy
        # says so (``dispatch.base.blas_spin``), the compiled path too (it reads this slot).
        self.blas = work in BLAS_WORK
        # Whether its result may differ from NumPy's in the last bits elsewhere: "always", "floats"
        # (on float or complex inputs) or "" (``numpy_catalog.may_differ``; strict mode reads it).
        self.differs = may_differ(name, work) if cataloged else ""

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _resolve(dotted: str) -> Any:
    obj: Any = np
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


_by_name: dict[str, Op] = {}
_by_function: dict[Any, Op] = {}


def op_named(name: str) -> Op:
    """The op for a catalog name; ``KeyError`` if NumPy has no such function."""
    op = _by_name.get(name)
    if op is None:
        entry = NUMPY_CATALOG[name]
        func = _resolve(name)
        op = Op(
            name=name,
            func=func,
            complexity=entry.complexity,
            work=entry.work,
            ufunc=func if isinstance(func, np.ufunc) else None,
            mutates=MUTATES.get(name),
            local=entry.work == "view" or name in LOCAL,
        )
        _by_name[name] = op
        _by_function.setdefault(func, op)
    return op


def _loaded(dotted: str) -> Any:
    """NumPy's object called ``dotted``, or ``None`` where it needs a module NumPy has not
    loaded (its functions cannot have been handed over) or NumPy has no such name."""
    first, _, rest = dotted.partition(".")
    obj = vars(np).get(first)
    for part in rest.split(".") if rest else ():
        obj = getattr(obj, part, None)
    return obj


def _catalog_name(func: Callable[..., Any]) -> str | None:
    """The catalog's name for a NumPy function: its own (``numpy.linalg.svd`` is ``"linalg.svd"``),
    else the first catalog name NumPy's loaded modules give it; ``None`` outside the catalog.
    Found without making the catalog's other ops: a script calls tens of its 500."""
    module, name = getattr(func, "__module__", None), getattr(func, "__name__", None)
    if isinstance(module, str) and isinstance(name, str) and (module == "numpy" or module.startswith("numpy.")):
        own = name if module == "numpy" else f"{module[6:]}.{name}"
        if own in NUMPY_CATALOG and _loaded(own) is func:
            return own
    return next((n for n in NUMPY_CATALOG if _loaded(n) is func), None)


def all_ops() -> list[Op]:
    """Every op made so far (catalog ops, ufunc methods, functions outside the catalog)."""
    return list({id(op): op for op in (*_by_name.values(), *_by_function.values())}.values())


def op_for_function(func: Callable[..., Any]) -> Op:
    """The op for a NumPy function object (what ``__array_function__`` receives).

    Functions outside the catalog get an op of their own that always runs NumPy on the host.
    """
    op = _by_function.get(func)
    if op is not None:
        return op
    name = None if made_at_run_time(func) else _catalog_name(func)
    if name is not None:
        return op_named(name)
    module = getattr(func, "__module__", "numpy") or "numpy"
    name = f"{module}.{getattr(func, '__qualname__', repr(func))}"
    op = Op(name=name, func=func, complexity=OpComplexity.LOW, work="host", cataloged=False)
    if not made_at_run_time(func):
        _by_function[func] = op

    from dispatch import tracing  # here: a script whose functions are all in the catalog never loads it

    tracing.fallback(op, "not in the NumPy catalog: runs on NumPy")
    return op


def made_at_run_time(func: Any) -> bool:
    """A ufunc ``np.frompyfunc`` made (NumPy names it ``"<function> (vectorized)"``): a program
    may make one per object, so its op is not kept, which would keep the function alive."""
    return isinstance(func, np.ufunc) and func.__name__.endswith(" (vectorized)")


def op_for_ufunc_method(ufunc: np.ufunc, method: str) -> Op:
    """The op for ``ufunc.method`` (``np.add.reduce`` is ``"add.reduce"``).

    A ufunc that is not NumPy's own (``scipy.special.erf``, ``np.frompyfunc``'s, NumPy's
    outside the catalog such as ``np.strings.str_len``) gets an op that runs it on NumPy."""
    name = ufunc.__name__
    foreign = not (name in NUMPY_CATALOG and getattr(np, name, None) is ufunc)
    if method == "__call__":
        return op_for_function(ufunc) if foreign else op_named(name)
    key = (ufunc, method)
    op = _by_function.get(key)
    if op is None and foreign:
        op = Op(name=f"{name}.{method}", func=getattr(ufunc, method), complexity=OpComplexity.LOW, work="host",
                method=method, mutates=0 if method == "at" else None, cataloged=False)
        if not made_at_run_time(ufunc):
            _by_function[key] = op
    elif op is None:
        complexity, work = _UFUNC_METHODS[method]
        op = Op(
            name=f"{ufunc.__name__}.{method}",
            func=getattr(ufunc, method),
            complexity=complexity,
            work=work,
            ufunc=ufunc,
            method=method,
            mutates=0 if method == "at" else None,
        )
        _by_function[key] = op
    return op


GETITEM = Op("__getitem__", operator.getitem, OpComplexity.LOW, "copy", local=True, cataloged=False)
SETITEM = Op("__setitem__", operator.setitem, OpComplexity.LOW, "copy", mutates=0, local=True, cataloged=False)


def _power_operator(base: Any, exponent: Any, /, **kwargs: Any) -> Any:
    """``base ** exponent`` as NumPy's operator computes it: an array to a Python scalar power
    such as 2, 0.5 or -1 takes NumPy's shortcut (``square``, ``sqrt``, ``reciprocal``), twice
    as fast as ``np.power`` and, for complex numbers, not equal to it in the last bits; written
    into ``base`` itself (``x **= 2``) as NumPy's in-place operator. Anything else is ``np.power``."""
    if type(base) is np.ndarray and type(exponent) in (int, float):
        if not kwargs:
            return base ** exponent
        out = kwargs.get("out")
        if len(kwargs) == 1 and (out is base or (type(out) is tuple and len(out) == 1 and out[0] is base)):
            base **= exponent
            return base
    return np.power(base, exponent, **kwargs)


# The ``**`` operator: the catalog's ``power`` (one name for the router, its history and its
# floors), run on NumPy as NumPy's operator runs it.
_power = op_named("power")
POWER_OPERATOR = Op("power", _power_operator, _power.complexity, _power.work, ufunc=np.power)
_by_function[_power_operator] = POWER_OPERATOR  # among all_ops(): its floors follow the policy, as every op's
