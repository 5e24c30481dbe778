"""Where one scikit-learn estimator call runs: ``choose(estimator, method, X)``.

The whole decision is this one function, so the calibrated cost model can replace the
interim policy without touching the patching or the running. The interim policy, first
match wins:

1. a forced target (``dispatch.using``, ``set_backend``, ``DISPATCH_BACKEND``): that target
   (``"numpy"`` means stock scikit-learn);
2. data already on a device (a ``dispatch.ndarray`` holding device memory, or a CuPy array /
   torch tensor): the engine that holds it, so nothing moves;
3. the seed's MoE table on the estimator's catalog complexity and ``n_samples * n_features``:
   the GPU tier runs on the first GPU target available (``cupy``, ``torch-cuda``,
   ``torch-mps``); SCALAR and SIMD run stock scikit-learn on NumPy (``torch-cpu`` only when
   forced, until calibration shows it pays). Small batches therefore never leave NumPy.

Large calls (``LEARN_MIN`` elements or more, host data, not forced) are measured instead: the
table's choice runs first, then the other side once (stock scikit-learn, or the best other
target: the first GPU, else torch-cpu), each timed to completion; from then on the kind of
call, (class, method, size bucket), runs where it measured faster. No NumPy kernel prices what
an estimator does (LinearDiscriminantAnalysis's SVD solver takes far longer than a GEMM over
the same data), and one call of each kind is a bounded price for knowing.

On a calibrated machine a call is also priced on each side (``_price``: the NumPy call its
work amounts to, on this machine's curves), and a target that is not up yet adds its start-up
(``dispatch.routing.startup``). A first run with no history then sends a fit the prices say
the GPU wins by far straight there, without running stock first; and no call brings a target
up unless it alone is priced (or, once stock was timed, measured) to save more than that
start-up: small fits never pay it, and the GPU's library is not even imported for them.

Whatever 1-3 picked, the hard rules then may send the call back to stock scikit-learn, with
the reason recorded as a fallback:

- scikit-learn must declare Array API support for this estimator *with these parameters*
  (its ``array_api_support`` tag, read at run time from the installed version);
- a call that failed in Array API mode while stock scikit-learn succeeded is remembered by
  (class, parameters, method, dtype of X), so the next such call goes straight to NumPy;
- the inputs must be arrays a device can hold: not sparse, not a DataFrame, not object or
  string dtypes, not float64 on MPS;
- ``set_output`` containers (pandas, polars) are built from NumPy: stock scikit-learn.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from converters import SklearnConverter
from dispatch import targets
from dispatch.base.box import Wrapper
from dispatch.base.state import STATE
from dispatch.base.tiers import Backend, OpComplexity
from dispatch.routing import learned, router, startup
from dispatch.sklearn import _price
from dispatch.targets import Unsupported

__all__ = ["FAR_SHARE", "LEARN_MIN", "Choice", "choose", "forget", "measured", "observe", "remember_unsupported",
           "unsupported"]

GPU_ORDER = targets.registry.gpu_names()  # each device's home first (a live view of the registry)
# From this many elements (n_samples x n_features) a call is worth timing on both sides once.
LEARN_MIN = 1 << 20
# A call the GPU wins by far goes there without timing stock scikit-learn first: a script that
# fits once would pay the stock fit in full to learn it (tens of times what the GPU takes, on
# such calls). By far: priced (``_price``) to save this share of stock's time, start-up included
# (a device's factorisations are priced from sizes at which it waits on launches, so its price
# for a large one errs high); a call no calibration prices, FAR times over the table's GPU threshold.
FAR_SHARE = 1 / 3
FAR = 64


class Choice(NamedTuple):
    """Where a call runs: ``target`` is a target name, or ``None`` for stock scikit-learn on
    NumPy. ``fallback`` is true when a target was wanted but a hard rule refused it."""

    target: str | None
    reason: str
    fallback: bool = False
    learn: tuple | None = None  # time this call and teach ``observe`` under this key


def choose(estimator: Any, method: str, X: Any, others: Iterable = ()) -> Choice:
    """Where ``estimator.<method>(X, *others)`` runs (see the module docstring for the policy).

    ``others`` are the other array arguments (y, sample_weight...), read only when a target
    other than NumPy is considered.
    """
    forced = STATE.forced_name()
    if forced is not None and forced != "auto":
        if forced == "numpy":
            return _FORCED_NUMPY
        name, why = forced, f"{forced}: forced"
    else:
        name = resident_target(X)
        if name is not None:
            why = f"data is on {name}"
        else:
            n = elements(X)
            selector = router.selector()
            key = (type(estimator), n, id(selector))
            known = _host_choices.get(key)
            if known is not None:
                return known
            complexity = complexity_of(type(estimator))
            if complexity is None:
                return _remember_host(key, f"{STOCK}: {type(estimator).__name__} is not in the catalog")
            tier = selector.select_with_moe(complexity, n)
            table = f"MoE: {complexity.name} on {n:,} elements -> {tier.name}"
            prices = _price.seconds(type(estimator), method, X, tuple(others)) if n >= LEARN_MIN or \
                tier is Backend.GPU else {}
            if n >= LEARN_MIN:
                other = _other_target(prices)
                if other is not None:
                    gpu_from = selector.thresholds.gpu[complexity]
                    far = gpu_from is not None and n >= FAR * gpu_from
                    return _measuring(estimator, method, X, tuple(others), n, table,
                                      tier is Backend.GPU and other in GPU_ORDER, other, far, prices)
            if tier is not Backend.GPU:
                return _remember_host(key, f"{STOCK}: {table}{_HOST_TIER[tier]}")
            name = _gpu_named(prices)
            if name is None:
                return _remember_host(key, f"{STOCK}: {table}, but no GPU here")
            left_down = _left_down(name, prices.get("numpy"), prices.get(name))
            if left_down is not None:
                return Choice(None, f"{STOCK}: {table}, but {left_down}")
            why = f"{name}: {table}"
    refusal = _refusal(estimator, method, name, X, tuple(others))
    if refusal is not None:
        return Choice(None, f"{STOCK}: {refusal}", fallback=True)
    return Choice(name, why)


# Every reason opens with where the call ran, then says why: "stock scikit-learn: ..." (NumPy)
# or "<target>: ...", or "data is on <target>".
STOCK = "stock scikit-learn"
_FORCED_NUMPY = Choice(None, f"{STOCK}: forced numpy")
# Why a host tier of the table keeps stock scikit-learn: NumPy's threaded BLAS is the SIMD tier
# for estimators (torch-cpu runs one only when forced, or once it measured faster).
_HOST_TIER = {Backend.SCALAR: "", Backend.SIMD: ", which stock scikit-learn's threaded NumPy runs"}


# ---- measuring large calls ------------------------------------------------------------------------

# (class, method, size bucket) -> {target name, or None for stock scikit-learn: seconds}
_measured: dict[tuple, dict[str | None, float]] = {}


def _other_target(prices: dict[str, float]) -> str | None:
    """What a large call is measured against stock scikit-learn on: a GPU, else torch-cpu."""
    gpu = _gpu_named(prices)
    if gpu is not None:
        return gpu
    # torch-cpu's start-up (torch's import, seconds) is paid only where the program loaded torch:
    # nothing prices an estimator on it to say it would repay that (dispatch.routing.startup)
    return "torch-cpu" if startup.admit("torch-cpu", None) and targets.probe("torch-cpu") is not None else None


def _gpu_named(prices: dict[str, float]) -> str | None:
    """The GPU target a call would take, named without importing any library: on a calibrated
    machine, of those up and those the calibration measured (and not found broken since), the
    one priced cheapest for this call with its start-up, else the first; uncalibrated, the first
    that works (``first_gpu``, which probes)."""
    if not router.ROUTER.models:
        return first_gpu()
    named = [n for n in GPU_ORDER if targets.registry.is_up(n)
             or (n in router.ROUTER.models and not targets.registry.tried(n))]
    priced = [n for n in named if n in prices]
    if priced:
        return min(priced, key=lambda n: prices[n] + startup.seconds(n))
    return named[0] if named else None


def _left_down(name: str, stock_s: float | None, there_s: float | None) -> str | None:
    """Why ``name`` is not brought up for this call (``None``: it is up, or the call repays its
    start-up). ``stock_s`` and ``there_s``: the call's seconds on stock scikit-learn and on
    ``name``, measured or priced (``None``: neither); the saving is their difference."""
    if startup.up(name):
        return None
    saving = None if stock_s is None else stock_s - (there_s or 0.0)
    if startup.admit(name, saving):
        return None
    if saving is None:
        return f"{name} is not up, and nothing prices this call to repay its start-up"
    return f"{name} is not up: priced to save {_ms(saving)}, less than its start-up of {_ms(startup.seconds(name))}"


def _by_far(stock_s: float, there_s: float) -> bool:
    """Whether ``there_s`` (the alternative's seconds, start-up included) saves ``FAR_SHARE`` of stock's."""
    return stock_s - there_s >= FAR_SHARE * stock_s


def _measuring(estimator: Any, method: str, X: Any, others: tuple, n: int, table: str, table_wants_other: bool,
               other: str, far: bool = False, prices: dict[str, float] | None = None) -> Choice:
    checked = startup.up(other)  # asking a target that is not up would bring it up: asked once chosen
    if checked:
        refusal = _refusal(estimator, method, other, X, others)  # nothing to measure against
        if refusal is not None:
            return Choice(None, f"{STOCK}: {refusal}", fallback=table_wants_other)
    key = (type(estimator), method, n.bit_length())
    seen = _measured.get(key) or _earlier(key)
    prices = prices or {}
    stock_s, there_s = prices.get("numpy"), prices.get(other)
    wants_other = table_wants_other
    if stock_s is not None and there_s is not None:  # the prices decide, not the table
        there_up = there_s + startup.seconds(other)
        wants_other, far = there_up < stock_s, _by_far(stock_s, there_up)
        table = f"priced stock {_ms(stock_s)}, {other} {_ms(there_s)} (start-up {_ms(there_up - there_s)})"
    if stock_s is not None and other in seen and None not in seen:
        # Measured there, it saves by far against stock's price: timing stock would cost its whole
        # time to learn that it loses (a large factorisation's price on a device errs high, so
        # the prices alone may not have said "by far").
        there_up = seen[other] + startup.seconds(other)
        if _by_far(stock_s, there_up):
            wants_other = far = True
            table = f"measured {other} {_ms(seen[other])} (start-up {_ms(there_up - seen[other])}), " \
                    f"priced stock {_ms(stock_s)}"
    # The alternative's first call pays one-time costs (kernels compiled on first use, memory
    # pools, a CUDA context): a loss is measured once more before it counts.
    again = len(seen) == 2 and seen.get(other, 0.0) > seen.get(None, 0.0) and _tries.get(key, 0) < 2
    first_only = other in seen and _tries.get(key, 0) < 2
    if far and wants_other and None not in seen:
        name, why = other, f"{table} by far, stock scikit-learn not measured"
        learn = key if other not in seen or first_only else None
    else:
        if not seen:
            name = other if wants_other else None
            why = f"{table}; measured first, then {STOCK if name else other}"
        elif len(seen) == 1:
            name, why = (other if None in seen else None), "measuring the alternative"
        elif again:
            name, why = other, f"measuring {other} again (lost {_ms(seen.get(other))} vs stock {_ms(seen.get(None))})"
        else:
            name = min(seen, key=lambda k: seen[k])
            why = f"measured {other} {_ms(seen.get(other))} vs stock {_ms(seen.get(None))}"
        learn = key if len(seen) < 2 or again else None
    if (name == other or not seen) and not checked:
        # A first run with no history brings a target up only for a call priced to repay its
        # start-up on its own (nor says it will measure it next); later runs judge by what
        # earlier ones measured.
        # Its first call may have paid one-time costs (CuPy compiling kernels its disk cache
        # lacked): measured once, it is priced at the cheaper of that and the calibration's price.
        there = seen.get(other, there_s)
        if first_only and there_s is not None:
            there = min(there, there_s)
        left_down = _left_down(other, seen.get(None, stock_s), there)
        if left_down is not None:
            return Choice(None, f"{STOCK}: {table}, but {left_down}", learn=key if None not in seen else None)
        refusal = _refusal(estimator, method, other, X, others) if name == other else None
        if refusal is not None:
            return Choice(None, f"{STOCK}: {refusal}", fallback=True)
    return Choice(name, f"{name or STOCK}: {why}", learn=learn)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:,.0f} ms"


def observe(key: tuple, target: str | None, seconds: float) -> None:
    """A measured call of kind ``key`` ran on ``target`` (``None``: stock scikit-learn)."""
    with _lock:
        _measured.setdefault(key, {})[target] = seconds  # a second try replaces the first
        if target is not None:
            _tries[key] = _tries.get(key, 0) + 1


_tries: dict[tuple, int] = {}  # key -> how many times the alternative was measured


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _kept() -> list[dict[str, Any]]:
    """What large calls measured, as a script's next run reads it (``dispatch.routing.learned``)."""
    with _lock:
        tries = dict(_tries)
    return [{"estimator": _name(cls), "method": method, "bucket": bucket, "tries": tries.get((cls, method, bucket), 0),
             "seconds": {"stock" if t is None else t: s for t, s in per.items()}}
            for (cls, method, bucket), per in measured().items()]


def _earlier(key: tuple) -> dict[str | None, float]:
    """What this script's earlier runs measured for calls of kind ``key`` (copied into ``_measured``)."""
    cls, method, bucket = key
    for row in learned.earlier("sklearn") or ():
        try:
            if (row["estimator"], row["method"], row["bucket"]) == (_name(cls), method, bucket):
                found = {None if t == "stock" else str(t): float(s) for t, s in row["seconds"].items()}
                with _lock:
                    _measured.setdefault(key, found)
                    # how often the alternative was measured (a first loss is measured once more);
                    # files kept before this was recorded: no more tries
                    _tries.setdefault(key, int(row.get("tries", 2)))
                return dict(_measured[key])
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return {}


learned.keep("sklearn", _kept)


def measured() -> dict[tuple, dict[str | None, float]]:
    """What large calls measured, by (class, method, size bucket)."""
    with _lock:
        return {k: dict(v) for k, v in _measured.items()}

# Decisions that depend only on (class, element count, selector): the serving loop's repeated
# small batches skip the table after the first call.
_host_choices: dict[tuple, Choice] = {}


def _remember_host(key: tuple, reason: str) -> Choice:
    if len(_host_choices) > 4096:
        _host_choices.clear()
    choice = _host_choices[key] = Choice(None, reason)
    return choice


# ---- the hard rules -------------------------------------------------------------------------------


def _refusal(estimator: Any, method: str, name: str, X: Any, others: tuple) -> str | None:
    """Why ``name`` cannot run this call, or ``None``. Cheap checks first."""
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        return "SCIPY_ARRAY_API is not 1: scikit-learn refuses Array API dispatch"

    if getattr(estimator, "copy", None) is False:  # stock works in the caller's array: a target would copy it
        return "copy=False: scikit-learn writes into the caller's array"
    target = targets.probe(name)
    if target is None:
        return f"target {name} is not available here"
    for i, a in enumerate((X, *others)):
        why = _input_refusal(a, target, "X" if i == 0 else "an argument")
        if why is not None:
            return why
    why = _output_refusal(estimator)
    if why is not None:
        return why
    if type(estimator) in _unsupported_classes:  # computing the key costs a get_params
        learned = _unsupported.get(unsupported_key(estimator, method, X))
        if learned is not None:
            return f"remembered: {learned}"
    if not array_api_support(estimator):
        return f"scikit-learn {_sklearn_version()} has no Array API support for {_short_repr(estimator)}"
    return None


def _input_refusal(a: Any, target: Any, what: str) -> str | None:
    if a is None or isinstance(a, (bool, int, float, str)):
        return None
    if _is_sparse(a):
        return f"{what} is a sparse matrix"
    if isinstance(a, np.matrix):  # stock raises TypeError for it: stock decides
        return f"{what} is an np.matrix"
    kind = array_kind(a)
    if kind == "other":
        if what == "X":
            return f"X is a {type(a).__name__}, not an array"
        if not isinstance(getattr(a, "dtype", None), (np.dtype, type(None))):
            # pandas' nullable dtypes (Int64, boolean...): stock converts them as it does, to floats
            return f"{what} has the extension dtype {a.dtype}"
        try:
            a = np.asarray(a)
        except Exception:
            return f"{what} ({type(a).__name__}) is not array-like"
        if a.dtype.kind not in "biufc":
            return f"{what} has dtype {a.dtype}"
        return None
    dtype = np.dtype(a.dtype) if kind == "numpy" else _dtype_of(a)
    if dtype is None:
        return f"{what} has a dtype NumPy cannot name"
    return _dtype_refusal(target.name, dtype)


@functools.cache
def _dtype_refusal_cached(target_name: str, dtype: np.dtype) -> str | None:
    if dtype.kind not in "biufc":
        return f"dtype {dtype} cannot go to {target_name}"
    if dtype.kind == "c":
        # scikit-learn refuses complex data by its dtype's ``kind``, which torch's dtypes lack: on
        # torch it would cast the data to real, dropping the imaginary part, and fit
        return f"complex data ({dtype}): scikit-learn's own checks decide, on NumPy"

    try:
        targets.get(target_name).from_host(np.empty((0,), dtype))
    except Unsupported as exc:
        return f"{target_name}: {exc}"
    return None


def _dtype_refusal(target_name: str, dtype: np.dtype) -> str | None:
    return _dtype_refusal_cached(target_name, np.dtype(dtype))


def _output_refusal(estimator: Any) -> str | None:
    import sklearn

    if sklearn.get_config().get("transform_output", "default") != "default":
        return "set_output containers are built from NumPy"
    config = getattr(estimator, "_sklearn_output_config", None)  # set by estimator.set_output(...)
    if isinstance(config, dict) and config.get("transform", "default") != "default":
        return "set_output containers are built from NumPy"
    return None


def array_api_support(estimator: Any) -> bool:
    """Whether the installed scikit-learn declares Array API support for ``estimator`` with
    its current parameters (the tag depends on them, e.g. ``PCA(svd_solver="arpack")``)."""
    try:
        from sklearn.utils import get_tags
    except ImportError:  # scikit-learn < 1.6 has no public tags: nothing is supported
        return False
    try:
        return bool(get_tags(estimator).array_api_support)
    except Exception:  # a third-party estimator with broken tags
        return False


# ---- what failed before ---------------------------------------------------------------------------

_lock = threading.Lock()
_unsupported: dict[tuple, str] = {}
_unsupported_classes: set[type] = set()
_stock_calls: set[tuple] = set()  # calls remembered to run stock scikit-learn (``_run``)


def unsupported_key(estimator: Any, method: str, X: Any = None) -> tuple:
    """(class, parameters, method, dtype of X): what a learned refusal is remembered by. The
    dtype is part of it: a failure on float16 data says nothing of float64's, and refusing
    ``fit`` on all data for it would run ``fit`` and ``transform`` on two engines, whose last
    bits differ, where ``fit_transform`` runs on one."""
    try:
        params = estimator.get_params(deep=False)
    except Exception:
        params = {}
    dtype = getattr(X, "dtype", None)
    return (type(estimator), tuple(sorted((k, _hashable(v)) for k, v in params.items())), method,
            type(X).__name__ if dtype is None else str(dtype))


def remember_unsupported(estimator: Any, method: str, why: str, X: Any = None) -> None:
    """A call of ``estimator.<method>`` on data like ``X`` failed in Array API mode where stock
    scikit-learn succeeded: such calls run stock from now on."""
    with _lock:
        _unsupported[unsupported_key(estimator, method, X)] = why
        _unsupported_classes.add(type(estimator))


def unsupported() -> dict[tuple, str]:
    """Every (class, parameters, method, dtype) learned unsupported in Array API mode, with why."""
    with _lock:
        return dict(_unsupported)


def forget() -> None:
    """Forget the learned refusals and cached decisions (tests; a new selector or scikit-learn)."""
    with _lock:
        _unsupported.clear()
        _unsupported_classes.clear()
        _host_choices.clear()
        _measured.clear()
        _tries.clear()
        _stock_calls.clear()  # the calls remembered to run stock: routed afresh
    _price.forget()


def _hashable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str, bytes)):
        return v
    if isinstance(v, (tuple, list)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, np.ndarray):
        return ("ndarray", v.shape, str(v.dtype))
    return type(v).__qualname__


# ---- facts about the inputs -----------------------------------------------------------------------


def array_kind(a: Any) -> str:
    """``"numpy"``, ``"dispatch"`` (a ``dispatch.ndarray``), ``"native"`` (a CuPy array or a
    torch tensor) or ``"other"`` (lists, DataFrames, scalars...)."""
    if isinstance(a, np.ndarray):
        return "numpy"

    if isinstance(a, Wrapper):
        return "dispatch"
    if is_native(a):
        return "native"
    return "other"


def is_native(a: Any) -> bool:
    """A CuPy array or a torch tensor (told by module name: neither library is imported)."""
    module = type(a).__module__
    return (module.startswith("cupy") or module.startswith("torch")) and hasattr(a, "shape") and hasattr(a, "dtype")


def engine_of(native: Any) -> Any:
    """The target owning a CuPy array or torch tensor."""
    from dispatch.arrays._array import _engine_of  # lazy: a script whose calls stay stock never loads the arrays

    return _engine_of(native)


def resident_target(X: Any) -> str | None:
    """The target holding ``X`` when it lives on a device, else ``None``."""
    kind = array_kind(X)
    if kind == "dispatch":
        data = X._engine_array
        if type(data) is np.ndarray:
            return None
        return engine_of(data).name
    if kind == "native":
        target = engine_of(X)
        return None if target.device.is_host else target.name
    return None


def _dtype_of(a: Any) -> np.dtype | None:
    try:
        return a.dtype if array_kind(a) == "dispatch" else engine_of(a).dtype_of(a)
    except Exception:
        return None


def elements(X: Any) -> int:
    """``n_samples * n_features`` (the element count the MoE table reads)."""
    shape = getattr(X, "shape", None)
    if shape is None:
        try:
            return len(X)
        except TypeError:
            return 0
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _is_sparse(a: Any) -> bool:
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(a)


# ---- facts about estimators ------------------------------------------------------------------------


@functools.cache
def complexity_of(cls: type) -> OpComplexity | None:
    """The catalog complexity of ``cls`` or of its nearest catalogued base class."""

    converter = SklearnConverter()
    for klass in cls.__mro__:
        try:
            return converter.complexity(klass.__name__)
        except KeyError:
            continue
    return None


@functools.cache
def first_gpu() -> str | None:
    """The first GPU target available here, in ``GPU_ORDER``."""
    for name in GPU_ORDER:
        if targets.registry.is_up(name):
            return name
    if not _gpu_listed():
        return None  # no GPU the drivers list: no library is imported to look for one
    for name in GPU_ORDER:
        if targets.probe(name) is not None:
            return name
    return None


@functools.cache
def _gpu_listed() -> bool:
    """Whether the kernel's drivers list a GPU (or this is Apple silicon), read without importing torch or CuPy."""
    from dispatch.routing import calibration  # lazy: the calibration module is read only on a first large call

    try:
        return bool(calibration._gpu_hardware())
    except Exception:  # unreadable: look for one the usual way
        return True


def _sklearn_version() -> str:
    import sklearn

    return sklearn.__version__


def _short_repr(estimator: Any) -> str:
    try:
        text = repr(estimator)
    except Exception:
        text = type(estimator).__name__
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."
