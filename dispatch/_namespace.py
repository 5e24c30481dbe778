"""Building ``dispatch``'s NumPy-shaped namespaces (the top level, ``linalg``, ``fft``).

Every public NumPy name is reachable with the same meaning: catalog functions become routed
wrappers, ufuncs become ``dispatch.ufunc`` proxies that route every method, and everything
else (dtypes, scalar types, constants, classes, submodules such as ``testing`` and ``ma``) is
NumPy's own object. Wrappers are made on first access and cached in the module.
"""

from __future__ import annotations

import functools
import sys
from types import FunctionType, ModuleType
from typing import Any

import numpy as np

from dispatch.arrays import _call, array_likes, callbacks, mirrors, scale_out
from dispatch.arrays._array import held, ndarray, viewed, wrap_host
from dispatch.arrays._compiled import fast, install_call, installed_in
from dispatch.arrays.broadcast import broadcast
from dispatch.base.box import Wrapper
from dispatch.base.numpy_catalog import NUMPY_CATALOG
from dispatch.base.ops import FFT_1D, op_for_ufunc_method, op_named
from dispatch.base.state import STATE

__all__ = ["binds", "lazy_namespace", "on_host", "routed", "ufunc"]


class _UfuncType(type):
    """NumPy's ufuncs are instances of ``dispatch.ufunc`` too: code that collects the ufuncs of
    ``np._core.umath`` with ``isinstance(obj, np.ufunc)`` finds them under dispatch as well."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return type(obj) is cls or isinstance(obj, np.ufunc)


class ufunc(metaclass=_UfuncType):
    """A NumPy ufunc whose calls and methods (reduce, accumulate, reduceat, outer, at) are routed.

    Attributes (``nin``, ``nout``, ``identity``, ``types``...) are the NumPy ufunc's; it equals
    and hashes as the NumPy ufunc (``np.sin == numpy.sin``, one key in a dict).
    """

    __slots__ = ("__name__", "_op", "_ufunc")

    def __eq__(self, other: Any) -> bool:
        return self._ufunc is (other._ufunc if type(other) is ufunc else other)

    def __hash__(self) -> int:
        return hash(self._ufunc)

    def __init__(self, numpy_ufunc: np.ufunc, name: str) -> None:
        self._ufunc = numpy_ufunc
        self._op = op_named(name)
        self.__name__ = numpy_ufunc.__name__

    # NumPy's ufunc's own docstring and ``__dict__``: under NumPy, ``np.add`` is that object itself
    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self._ufunc.__doc__

    @__doc__.setter
    def __doc__(self, value: str | None) -> None:
        self._ufunc.__doc__ = value

    @__doc__.deleter
    def __doc__(self) -> None:
        del self._ufunc.__doc__

    @property
    def __dict__(self) -> dict:  # type: ignore[override]
        return self._ufunc.__dict__

    def resolve_dtypes(self, dtypes: tuple, **kwargs: Any) -> tuple:
        """NumPy's ``ufunc.resolve_dtypes``: the dtypes its loop takes and gives for ``dtypes``."""
        return self._ufunc.resolve_dtypes(dtypes, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            if len(args) == 2 and self._ufunc.nin == 2:  # (a one-operand ufunc's second is its out)
                return _call.call_fast_ufunc(self._op, args[0], args[1])
            if len(args) == 1:
                return _call.call_fast_unary(self._op, args[0])
        return _call.call(self._op, args, kwargs)

    def _method(self, method: str, args: tuple, kwargs: dict) -> Any:
        return _call.call(op_for_ufunc_method(self._ufunc, method), args, kwargs)

    def reduce(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("reduce", args, kwargs)

    def accumulate(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("accumulate", args, kwargs)

    def reduceat(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("reduceat", args, kwargs)

    def outer(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("outer", args, kwargs)

    def at(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("at", args, kwargs)  # None, or what an operand's __array_ufunc__ gives, as NumPy's

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ufunc, name)

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"

    def __reduce__(self) -> tuple:
        return _ufunc_named, (self._op.name,)  # by name, like NumPy's ufuncs: loaded, this very object


def _ufunc_named(name: str) -> ufunc:
    """``dispatch.<name>``: what a pickled ufunc of dispatch's loads as."""
    return getattr(sys.modules["dispatch"], name)


# NumPy's keywords, read by ``inspect.signature`` when asked (parsing them here compiles the tokenizer's
# patterns: a tenth of a script's start)
ufunc.resolve_dtypes.__wrapped__ = np.ufunc.resolve_dtypes
callbacks.install()  # apply_along_axis and its kind give the user's function dispatch arrays, on every path
ufunc.__call__ = fast("ufunc", None, ufunc.__call__)
install_call(ufunc)
installed_in(ufunc, sys.modules["dispatch"])  # the package itself, loaded before any of its modules


def routed(name: str, func: Any, module: str) -> Any:
    """A wrapper that routes the catalog function ``name`` (NumPy's ``func``)."""
    op = op_named(name)

    if name in FFT_1D:  # a transform's work follows n where one is given, not its input's size

        def call(*args: Any, **kwargs: Any) -> Any:
            return _call.call(op, args, kwargs, sized=_call.fft_sized(args, kwargs))

    else:

        def call(*args: Any, **kwargs: Any) -> Any:
            return _call.call(op, args, kwargs)

    wrapper = functools.wraps(func)(call)
    wrapper.__module__ = module
    bound = binds(func)
    if op.local:  # views, casts and copies of host data: NumPy's, at any size
        wrapper = fast("local", op, wrapper, bound=bound)
    elif name not in FFT_1D and not op.local:
        wrapper = fast("function", op, wrapper, bound=bound)
    elif name in FFT_1D:  # a transform's floors follow n (_call.fft_sized)
        wrapper = fast("transform", op, wrapper, bound=bound)
    wrapper.__wrapped__ = func
    return signed_as(func, wrapper)


def on_host(func: Any, module: str) -> Any:
    """NumPy's ``func`` given its first argument (an array, or a list of arrays) as host NumPy:
    for NumPy's functions that tell arrays apart by ``isinstance(obj, numpy.ndarray)`` and make
    NumPy's own subclass of them (``rec.array``, ``char.array``)."""

    @functools.wraps(func)
    def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
        return func(_call.host_args((obj,))[0], *args, **kwargs)

    wrapper.__module__ = module
    return wrapper


def signed_as(func: Any, wrapper: Any) -> Any:
    """``wrapper`` with NumPy's ``func``'s ``__signature__`` or ``__text_signature__``, where it has
    one: what ``inspect`` and NumPy's own signature tests read first."""
    for name in ("__signature__", "__text_signature__"):
        if getattr(func, name, None) is not None:
            setattr(wrapper, name, getattr(func, name))
    return wrapper


_NO_OBJECT = object()  # array() called with its first argument by keyword, or without it


def _asarray(func: Any, copy_default: bool | None) -> Any:
    """``array`` / ``asarray``: a dispatch array stays where it is; anything else is NumPy's."""
    op = op_named(func.__name__)

    @functools.wraps(func)
    def wrapper(a: Any = _NO_OBJECT, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
        if a is _NO_OBJECT:  # ``np.array(object=x)``: NumPy's name for array's first argument
            if "object" not in kwargs:
                raise TypeError(f"{func.__name__}() missing required argument 'object' (pos 0)")
            a = kwargs.pop("object")
        if type(a) is np.ndarray and not copy_default and dtype is None and not args and not kwargs and STATE.plain:
            mirrors.escape(a)  # (mirrors) wrapped as it is: the caller may still write it
            return held(a)  # ``asarray`` of a NumPy array: the call path's answer, without the path
        copy = kwargs.get("copy", copy_default)
        if isinstance(copy, np._CopyMode):  # NumPy's enum: its truth value raises for IF_NEEDED
            copy = kwargs["copy"] = _COPY_MODES[copy]
        if not args and set(kwargs) <= {"copy"} and not isinstance(a, (Wrapper, np.ndarray)):
            whole = array_likes.read_whole(a, dtype, copy)  # an object read through __array__: its array
            if whole is not None:
                a, copy = whole
                if "copy" in kwargs or copy is not copy_default:
                    kwargs["copy"] = copy
        if not copy and isinstance(a, np.ndarray):
            mirrors.escape(a)  # (mirrors)
        if isinstance(a, Wrapper) and not args and set(kwargs) <= {"copy"}:
            # an equal dtype, another object (metadata): NumPy's view with it
            if dtype is not None and np.dtype(dtype) is not a.dtype and type(a._engine_array) is np.ndarray \
                    and not copy and np.dtype(dtype) == a.dtype:
                return viewed(np.asarray(a._engine_array, dtype, copy=copy), a)
            if dtype is not None and np.dtype(dtype) != a.dtype:
                if copy is False:  # NumPy's answer: a view where the cast needs no copy, else its ValueError
                    data = a._engine_array
                    if type(data) is np.ndarray:
                        return wrap_host(np.asarray(data, dtype, copy=False))
                    np.asarray(np.empty(0, a.dtype), dtype, copy=False)  # raises where the cast needs a copy
                    return a.astype(dtype, copy=False)
                return a.astype(dtype)
            if copy:
                return a.copy()
            return a
        if type(a) in (list, tuple) and _is_object(dtype):  # NumPy keeps the arrays given as the objects held
            try:
                return wrap_host(func(a, dtype, *args, **kwargs))
            except ValueError as error:  # an object in it whose __array__ gives a dispatch array
                if not array_likes.refused(error):
                    raise
                return wrap_host(array_likes.restore(func(array_likes.nested(a), dtype, *args, **kwargs)))
        if dtype is not None:
            kwargs["dtype"] = dtype
        made = array_likes.made
        result = _call.call(op, (a, *args), kwargs)
        if array_likes.made != made and result.dtype.kind == "O" and type(result._engine_array) is np.ndarray:
            array_likes.restore(result._engine_array)  # objects NumPy held as they are, shown to it in proxies
        return result

    wrapper.__module__ = "dispatch"
    if copy_default:  # ``array``: a copy of host data (a list of host arrays), NumPy's at any size
        return fast("local", op, wrapper, bound=False)
    return fast("asarray", op, wrapper, bound=False)


def _is_object(dtype: Any) -> bool:
    """Whether ``dtype`` names NumPy's object dtype (the compiled path's is_object_dtype)."""
    return dtype is object or (isinstance(dtype, (str, np.dtype)) and dtype in ("O", "object", _OBJECT))


_OBJECT = np.dtype(object)
_COPY_MODES = {np._CopyMode.ALWAYS: True, np._CopyMode.IF_NEEDED: None, np._CopyMode.NEVER: False}

# Names whose wrapper is special, per namespace prefix ("" is the top level).
_SPECIAL = {
    "ndarray": lambda obj: ndarray,
    "ufunc": lambda obj: ufunc,
    "array": lambda obj: _asarray(obj, True),
    "asarray": lambda obj: _asarray(obj, None),
    "asanyarray": lambda obj: _asarray(obj, None),
    "broadcast": lambda obj: broadcast,
}

_META = {"shape", "ndim", "size"}  # answered from metadata: no data moves
_CHUNKABLE = frozenset({"zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace"})


def _metadata(name: str, func: Any) -> Any:
    @functools.wraps(func)
    def wrapper(a: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(a, Wrapper):
            if name == "size":
                axis = args[0] if args else kwargs.get("axis")
                return a.size if axis is None else a.shape[axis]
            return getattr(a, name)
        return func(a, *args, **kwargs)

    wrapper.__module__ = "dispatch"
    return wrapper


def public(prefix: str, name: str, obj: Any, module: str) -> Any:
    """What ``dispatch`` shows for NumPy's public ``obj`` called ``prefix + name``."""
    value = _public(prefix, name, obj, module)
    if type(value) is FunctionType and value is not obj and not binds(obj):
        return _Function(value)
    return value


def binds(numpy_function: Any) -> bool:
    """Whether a class holding NumPy's function binds it as a method: its Python-level
    functions yes, its builtins (``array``, ``zeros``, ufuncs) no. dispatch's does the same."""
    return hasattr(type(numpy_function), "__get__")


class _Function(staticmethod):
    """A namespace function written in Python that a class holding it does not bind as a method
    (``class T: array = np.array``), as NumPy's builtin is not bound; it pickles by name."""

    @property
    def __wrapped__(self) -> Any:  # NumPy's function, as the wrapper's own
        return getattr(self.__func__, "__wrapped__", self.__func__)

    def __reduce__(self) -> str:
        return self.__qualname__

    def __repr__(self) -> str:
        return repr(self.__func__)


def _public(prefix: str, name: str, obj: Any, module: str) -> Any:
    full = prefix + name
    if not prefix and name in _SPECIAL:
        return _SPECIAL[name](obj)
    if not prefix and name in _META:
        return _metadata(name, obj)
    if not prefix and name in _CHUNKABLE:  # a result too large for the host is made chunked, in Dask
        return signed_as(obj, scale_out.creation(name, routed(name, obj, module)))
    if full in NUMPY_CATALOG and callable(obj) and not isinstance(obj, type):
        if isinstance(obj, np.ufunc):
            return ufunc(obj, full)
        return routed(full, obj, module)
    return obj


def lazy_namespace(module_globals: dict[str, Any], numpy_module: ModuleType, prefix: str) -> tuple[Any, Any]:
    """``__getattr__`` and ``__dir__`` for a module that mirrors ``numpy_module``."""
    own = set(module_globals)
    module_name = module_globals["__name__"]

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        try:
            obj = getattr(numpy_module, name)
        except AttributeError:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}") from None
        value = public(prefix, name, obj, module_name)
        module_globals[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(own | {n for n in dir(numpy_module) if not n.startswith("_")})

    return __getattr__, __dir__

