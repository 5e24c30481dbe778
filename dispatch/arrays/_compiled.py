"""The compiled fast path (``dispatch/arrays/_fastpath.c``), where this install built it.

``fast(kind, op, fallback)`` is what dispatch installs for a routed operator, method or
function: a compiled callable that runs the small host cases on NumPy and hands every other
call to ``fallback``, the Python function with the full rules; or ``fallback`` itself where the
extension was not built (no C compiler at install time) or ``DISPATCH_PURE_PYTHON=1`` turns it
off. Both give the same results; the compiled one saves most of dispatch's cost per call.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from dispatch.base.settings import ENV

try:
    from dispatch.arrays import _fastpath  # lazy: optional, built where a C compiler was found
except ImportError as exc:  # an install without a C compiler: the Python path serves
    _fastpath = None
    STATUS = f"not built ({exc})"
else:
    STATUS = "compiled"
_built = _fastpath  # (its stack reader serves the Python path too: from_interpreter)
if _fastpath is not None and ENV.pure_python:
    _fastpath = None
    STATUS = "off (DISPATCH_PURE_PYTHON is set)"

ACTIVE = _fastpath is not None

__all__ = [
    "ACTIVE",
    "MIRRORS_SAFE",
    "STATUS",
    "also_elides",
    "attr",
    "bind_router",
    "fast",
    "from_interpreter",
    "install_buffer",
    "install_call",
    "install_slots",
    "memo_served",
    "python_path",
    "refs_seen",
    "set_mirrors",
    "set_temporary_refs",
    "setup",
    "setup_creation",
]


def setup(ndarray: type, state: Any, wrap: Any, elide_bytes: int, op: type, blas_spin: dict) -> None:
    """Tell the compiled path the array type, the switches it reads, the Python rules' limits,
    the op type (whose floors and ``blas`` it reads from their slots) and ``blas_spin``'s
    namespace (where it notes that NumPy's BLAS ran, as ``blas_spin.ran`` does)."""
    if _fastpath is not None:
        _fastpath.setup(ndarray, state, wrap, elide_bytes, op, blas_spin)


def from_interpreter() -> bool:
    """Whether the operator running now was called by the interpreter, not from NumPy's C code
    (its loop over an object array holds each element through a borrowed reference, which shows
    a temporary's count): read from the C stack, as NumPy's own elision does. False where the
    extension was not built: then no operand counts as a temporary."""
    return _built is not None and _built.from_interpreter()


# A compiled path built from an older source cannot hand writes to Python: no copies are kept then.
MIRRORS_SAFE = _fastpath is None or hasattr(_fastpath, "set_mirrors")


def set_mirrors(live: bool, min_bytes: int, owners: dict) -> None:
    """Whether device copies of host data are kept (a write to memory in ``owners``, the mirrors'
    write counters by ``id`` of the memory's owner, then takes the Python path, which sees it, as
    does every call that may write through ``out=``), and the smallest memory mirrored (larger
    memory handed out or coming in as a NumPy array always takes it): ``dispatch.arrays.mirrors``."""
    if _fastpath is not None and MIRRORS_SAFE:
        _fastpath.set_mirrors(live, min_bytes, owners)


def refs_seen() -> int:
    """The reference count the compiled path saw on the last large operand it handed to Python
    (-1: none yet, or no compiled path)."""
    return _fastpath.refs_seen() if _fastpath is not None else -1


def also_elides(compiled: Any) -> None:
    """Tell a compiled operator (``fast``'s) that NumPy's also computes into a temporary it does
    not check itself: a forward operator's right operand (``+ * & | ^``), a unary operator's own
    (``- + abs ~``). Such an operand goes to the Python operator, which decides. A compiled path
    built from an older source keeps such calls, unelided, as before."""
    if _fastpath is not None and hasattr(_fastpath, "also_elides") and type(compiled) is _fastpath.Fast:
        _fastpath.also_elides(compiled)


def set_temporary_refs(n: int) -> None:
    """Operands held more than ``n`` times (a temporary's count there) cannot be temporaries:
    the compiled path runs their operators itself (-1: every large operand goes to Python)."""
    if _fastpath is not None:
        _fastpath.set_temporary_refs(n)


def install_slots() -> int:
    """Point ``dispatch.ndarray``'s operator, comparison and index slots at the compiled
    callables the class holds, past CPython's generic method lookup; how many slots were set.
    Setting one of those methods on the class again puts the generic slot back."""
    return _fastpath.install_slots() if _fastpath is not None else 0


def install_buffer(cls: type) -> bool:
    """Give ``cls`` the buffer protocol on Python 3.11 (3.12 reads its ``__buffer__``): the
    buffer of the NumPy array ``cls._shared_host()`` returns. Set wherever the extension was
    built, ``DISPATCH_PURE_PYTHON`` or not: it is a protocol, not a fast path. Whether it was set."""
    if _built is None or sys.version_info >= (3, 12):
        return False
    _built.install_buffer(cls)
    return True


def install_call(ufunc: type) -> bool:
    """Point ``dispatch.ufunc``'s call slot at its compiled ``__call__``, past CPython's generic
    lookup; whether it was set. Setting ``__call__`` on the class again puts the generic slot back."""
    if ufunc not in _ufunc:
        _ufunc.append(ufunc)
    return bool(_fastpath.install_call(ufunc)) if _fastpath is not None else False


def attr(name: str, prop: property) -> Any:
    """What to install for the array property ``name`` (``shape``, ``dtype``, ``ndim`` or
    ``size``): a compiled descriptor that reads NumPy data's own, and ``prop`` for the rest; or
    ``prop`` itself where the extension is not active."""
    return _fastpath.Attr(name, prop) if _fastpath is not None else prop


def setup_creation(cluster_ns: dict) -> None:
    """Tell the compiled path where ``dispatch.cluster.LIVE_ELEMENTS`` is: the creation functions
    it runs make results under that size (larger ones may go to Dask)."""
    if _fastpath is not None:
        _fastpath.setup_creation(cluster_ns)


def bind_router(router: Any, decision: type, settled_every: int, into: Any, fft_padded: int) -> None:
    """Hand the compiled path what serving the memo reads: the router (whose ``memo`` and
    ``epoch`` it reads at each call, from their slots), the decisions' type (whose ``key``,
    ``sample``, ``settled`` and ``calls`` it reads), how often a settled decision is timed, the
    end of the key of an operator run into its temporary, and how many times a transform's ``n``
    pads its input before its work no longer follows its size. A name missing raises here."""
    if _fastpath is not None:
        _fastpath.bind_router(router, decision, settled_every, into, fft_padded)


def memo_served() -> int:
    """How many calls the compiled path has served from the memo (-1: no compiled path)."""
    return _fastpath.memo_served() if _fastpath is not None else -1


def fast(kind: str, op: Any, fallback: Any, func: Any = None, bound: bool = True) -> Any:
    """The callable to install for ``fallback``: kinds and their cases in ``_fastpath.c``.
    ``func`` is what NumPy calls (``op.func`` unless given: an ndarray method's own). ``bound``:
    a class holding it binds it as a method, as Python functions are (not NumPy's builtins)."""
    if _fastpath is None:
        return fallback
    if func is None and op is not None:
        func = op.func
    compiled = (_fastpath.Fast if bound else _fastpath.Function)(kind, op, func, fallback)
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):  # the function's own, not its __dict__
        setattr(compiled, name, getattr(fallback, name, None))
    compiled.__wrapped__ = fallback
    return compiled


_homes: list[Any] = []  # the classes and modules compiled callables are installed in
_ufunc: list[type] = []  # the ufunc type whose call slot ``install_call`` set


def installed_in(*homes: Any) -> None:
    """Note classes or modules that hold installed callables (for ``python_path``)."""
    _homes.extend(homes)


@contextlib.contextmanager
def python_path() -> Iterator[int]:
    """For the block, every compiled callable and attribute dispatch has installed is replaced by
    its Python function or property (to compare the two paths in one process); yields how many
    were replaced."""
    swapped = []
    for home in _homes:
        for name, value in list(vars(home).items()):
            if _fastpath is not None and isinstance(value, (_fastpath.Fast, _fastpath.Attr)):
                swapped.append((home, name, value))
                setattr(home, name, value.fallback)
    try:
        yield len(swapped)
    finally:
        for home, name, value in swapped:
            setattr(home, name, value)
        install_slots()
        for ufunc in _ufunc:
            install_call(ufunc)
