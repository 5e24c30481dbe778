"""``dispatch.ndarray``: a NumPy-compatible array that holds a backend-native array.

Host data is always a ``numpy.ndarray`` (NumPy and torch-cpu share it zero-copy); device
data is a CuPy array or a torch tensor, whichever engine produced it (engines on one device
exchange arrays zero-copy through DLPack). Every operator, method and NumPy function called on
one goes through the router (``dispatch.arrays._call``); results stay on the device where they were
computed.
"""

from __future__ import annotations

import builtins
import math
import operator
import sys
import types
import weakref
from typing import Any

import numpy as np

from dispatch import cluster, targets
from dispatch.arrays import _call, _compiled, creations, mirrors
from dispatch.arrays._call import host_shortcut
from dispatch.arrays._compiled import fast
from dispatch.arrays.array_likes import for_numpy, nested, refused, restore
from dispatch.base import blas_spin, box
from dispatch.base.box import Wrapper
from dispatch.base.devices import (
    DASK,
    HOST,
    Device,
    device_of,
    is_backend_type,
    library_of,
    parse_device,
    torch_cpu_to_numpy,
)
from dispatch.base.ops import (
    FFT_1D,
    GETITEM,
    POWER_OPERATOR,
    SETITEM,
    Op,
    made_at_run_time,
    op_for_function,
    op_for_ufunc_method,
    op_named,
)
from dispatch.base.state import STATE

__all__ = ["device_scalar", "held", "ndarray", "viewed", "wrap", "wrap_host"]


class _ArrayType(type):
    """``dispatch.ndarray``'s type. A class a program derives from ``dispatch.ndarray``
    (``class S(np.ndarray)`` under ``import dispatch as np``) derives from ``numpy.ndarray``
    instead: a subclass is NumPy's business (its ``__array_finalize__``, ``__array_wrap__``,
    its type kept through views and functions: docs/equality.md), and dispatch's functions run
    NumPy on it. Only dispatch's own array types (``wrapper=True``) derive from the wrapper."""

    def __new__(mcls, name: str, bases: tuple, namespace: dict, wrapper: bool = False, **kwargs: Any) -> type:
        if wrapper or not any(b is ndarray for b in bases):
            return super().__new__(mcls, name, bases, namespace, **kwargs)
        bases = tuple(_Subclassed if b is ndarray else b for b in bases)
        meta = builtins.type
        for b in bases:  # the most derived metaclass of the bases NumPy's subclass has
            if issubclass(builtins.type(b), meta):
                meta = builtins.type(b)
        return meta(name, bases, namespace, **kwargs)

    # ``dispatch.ndarray`` names NumPy's arrays too, as a drop-in's ndarray must: an array NumPy's
    # own functions made is ``isinstance(x, np.ndarray)`` under ``import dispatch as np``. (Dispatch's
    # own code asks ``box.Wrapper``: whether an object is one of its wrappers.)
    def __instancecheck__(cls, x: Any) -> bool:
        if cls is ndarray:
            return isinstance(x, (Wrapper, np.ndarray))
        return builtins.type.__instancecheck__(cls, x)

    def __subclasscheck__(cls, sub: Any) -> bool:
        if cls is ndarray:
            return issubclass(sub, (Wrapper, np.ndarray))
        return builtins.type.__subclasscheck__(cls, sub)


class ndarray(Wrapper, metaclass=_ArrayType, wrapper=True):
    """An n-dimensional array that runs each call on the fastest backend.

    Construct arrays with ``dispatch.array``, ``dispatch.asarray``, ``dispatch.zeros`` and the
    other creation functions; ``dispatch.ndarray(shape, dtype)`` mirrors ``numpy.ndarray``.
    """

    # Compiled, an array has no __dict__, as NumPy's has none: each array is made and freed without
    # one (15-30 ns of the 100-140 dispatch adds to an operator on a small array).
    # ``_base``: the dispatch array a view was taken of, named by ``base`` and held while the view
    # lives, as NumPy's view holds its base (set by ``viewed``; unset where there is none).
    # ``_engine_array``: the engine's array (NumPy, CuPy, torch, Dask) the wrapper holds; a name no
    # other library reads (numpy.ma reads ``_data`` off any value, a MaskedArray's data).
    if _compiled.ACTIVE:
        __slots__ = ("__weakref__", "_base", "_engine_array")
    else:
        __slots__ = ("__dict__", "__weakref__", "_base", "_engine_array")
    __array_priority__ = 100.0  # NumPy defers to us in mixed binary operators

    def __new__(cls, shape: Any, dtype: Any = float, buffer: Any = None, offset: int = 0,
                strides: Any = None, order: Any = None) -> ndarray:
        if not issubclass(cls, Wrapper):  # ``np.ndarray.__new__(cls, ...)`` in a subclass's own __new__
            return np.ndarray.__new__(cls, shape, dtype, buffer, offset, strides, order)
        data = np.ndarray(shape, dtype, buffer, offset, strides, order)
        if buffer is not None:
            mirrors.escape(data)  # (mirrors) the caller's memory: never copied to a device and kept
        return held(data, cls)

    def __class_getitem__(cls, item: Any) -> types.GenericAlias:
        """``np.ndarray[shape, dtype]`` in annotations, as NumPy's: one or two arguments."""
        count = len(item) if isinstance(item, tuple) else 1
        if count not in (1, 2):
            raise TypeError(f"Too {'few' if count == 0 else 'many'} arguments for {cls.__module__}.{cls.__qualname__}")
        return types.GenericAlias(cls, item)

    # ---- construction from native arrays -----------------------------------------------------

    @staticmethod
    def _from_native(native: Any) -> ndarray:
        """Wrap a NumPy, CuPy or torch array (torch on the CPU becomes NumPy, zero-copy)."""
        if type(native) is not np.ndarray and not isinstance(native, np.ndarray):
            module = type(native).__module__
            if module.startswith("torch") and native.device.type == "cpu":
                native = _torch_cpu_to_numpy(native)
            elif not (module.startswith("cupy") or module.startswith("torch") or module.startswith("dask.array")):
                native = np.asarray(native)
        return held(native)

    # ---- where the data is ----------------------------------------------------------------------

    @property
    def device(self) -> Device:
        """The device holding the data: ``cpu``, ``cuda:N`` or ``mps``."""
        data = self._engine_array
        return HOST if type(data) is np.ndarray else device_of(data)

    @property
    def target(self) -> str:
        """The engine holding the data now (``numpy``, ``cupy``, ``torch-cuda``, ``torch-mps``)."""
        return _engine_of(self._engine_array).name

    def to(self, where: str | Device) -> ndarray:
        """A copy on ``where``: a device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``) or a
        target name (``"cupy"``, ``"torch-cuda"``). Returns ``self`` if it is already there."""
        if isinstance(where, str) and where in targets.names():
            target = targets.get(where)
        else:
            target = _target_for_device(parse_device(where))
        data = self._engine_array
        if target.owns(data):
            return self
        if type(data) is np.ndarray:
            return wrap(target.from_host(data))
        if device_of(data) == target.device:
            return wrap(target.adopt(data))
        return wrap(target.from_host(_host(data)))

    def to_device(self, device: Any, /, *, stream: Any = None) -> ndarray:
        """The Array API's spelling of ``to``: this array on ``device`` (``"cpu"``, ``"cuda"``...)."""
        if stream is not None:
            raise ValueError("The stream argument in to_device() is not supported")  # NumPy's message
        return self.to(device)

    # ---- NumPy protocols --------------------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        data = self._engine_array
        live = _call._LIVE
        if live.recording:  # the program reads it on the host: its region ends here
            live.read(self)
        if type(data) is np.ndarray:
            host = data
            if not copy and (dtype is None or data.dtype == dtype):
                mirrors.escape(data)  # (mirrors) handed out as it is: the caller may write it unseen
        else:
            host = mirrors.handed(data)  # (mirrors) the caller's own copy, from a kept one where valid
        if copy is False and host is not data:
            raise ValueError("the array lives on a device: making a host array needs a copy")
        if dtype is not None and host.dtype != dtype:
            if copy is False:  # NumPy's refusal: the cast needs a copy
                np.asarray(host, dtype, copy=False)
            return host.astype(dtype)
        return host.copy() if copy and host is data else host

    # The buffer protocol and the array interfaces hand out the host memory itself, as
    # ``__array__`` does (NumPy reads the buffer first, then the interfaces, then ``__array__``:
    # docs/equality.md has the cost). Data a device holds has no host memory to hand out: a
    # host copy written through them would lose its writes, so they refuse it, and NumPy falls
    # back on ``__array__``, which copies.

    def _shared_host(self) -> np.ndarray:
        """The host data, handed out through ``__array__`` (which notes that it left dispatch's
        sight); ``BufferError`` for data a device holds, and for the dtypes NumPy would not read
        back exactly (``_EXPORTED_KINDS``: NumPy then reads ``__array__``)."""
        data = self._engine_array
        if type(data) is not np.ndarray:
            raise BufferError(f"an array held by {self.device} has no host memory to share: "
                              "numpy.asarray(x) makes a host copy")
        if data.dtype.kind not in _EXPORTED_KINDS:
            raise BufferError(_THROUGH_ARRAY)
        return self.__array__()

    def __buffer__(self, flags: int) -> memoryview:
        return memoryview(self._shared_host())

    def _described(self, name: str) -> Any:
        """NumPy's ``name`` of the host data. Absent (AttributeError, so that NumPy reads
        ``__array__``: a host copy, or the data itself) for data a device holds, and for the
        dtypes NumPy would not read back exactly (``_EXPORTED_KINDS``)."""
        data = self._engine_array
        if type(data) is not np.ndarray:
            raise AttributeError(_DEVICE_HELD)
        if data.dtype.kind not in _EXPORTED_KINDS:  # (a constant message: NumPy's coercion drops it each time)
            raise AttributeError(_THROUGH_ARRAY)
        return getattr(self.__array__(), name)

    @property
    def __array_interface__(self) -> dict:
        return self._described("__array_interface__")

    @property
    def __array_struct__(self) -> Any:
        return self._described("__array_struct__")

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out", ())
        for x in (*inputs, *(out if isinstance(out, tuple) else (out,))):
            if not _handled(x) and not _ufunc_operand(type(x)):
                return NotImplemented
        try:
            op = op_for_ufunc_method(ufunc, method)
        except (AttributeError, KeyError):  # not a ufunc, or not one of its methods
            getattr(ufunc, method)  # NumPy's error for it (a TypeError where the method is no name)
            raise
        if method == "__call__" and not made_at_run_time(ufunc):  # (an entry would keep it alive)
            _PROTOCOL_OPS[ufunc] = op
        return _call.call(op, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        if not all(issubclass(t, _HANDLED_TYPES) or is_backend_type(t) for t in types):
            return NotImplemented
        if type(args) is not tuple or type(kwargs) is not dict:  # NumPy's checks of a direct call
            raise TypeError("args must be a tuple." if type(args) is not tuple else "kwargs must be a dict.")
        op = op_for_function(func)
        if not op.local and op.name not in FFT_1D:  # (the fast path of these has other rules: _call.call)
            _PROTOCOL_OPS[func] = op
        return _call.call(op, args, kwargs)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        if api_version is not None:  # NumPy's check of the version asked for, and its error
            np.empty(0).__array_namespace__(api_version=api_version)
        return sys.modules["dispatch"]  # the package itself, loaded before any of its modules

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        """NumPy's: ``array`` (a result computed from this array) as a dispatch array, or as
        NumPy's scalar where ``return_scalar`` and it is 0-d."""
        if not isinstance(array, Wrapper):
            array = held(np.asarray(array))
        return array.__array__()[()] if return_scalar and array.ndim == 0 else array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._exporter().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._exporter().__dlpack_device__()

    def _exporter(self) -> Any:
        data = self._engine_array
        mirrors.escape(data)  # (mirrors) host memory shared through DLPack may be written unseen
        if not hasattr(data, "__dlpack__"):  # a lazy array (Dask) has no memory yet
            raise BufferError(f"an array held by {self.device} has no memory to share through DLPack: "
                              "compute it first (dispatch.compute)")
        return data

    # ---- attributes ---------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._engine_array.shape)

    @shape.setter
    def shape(self, value: Any) -> None:
        data = self._engine_array
        if type(data) is np.ndarray:
            view = data.view()  # the NumPy object may be the caller's own: reshape a view of it
            view.shape = value  # NumPy raises where that would need a copy
            self._engine_array = view
        else:
            self._engine_array = self.reshape(value)._engine_array

    @property
    def dtype(self) -> np.dtype:
        data = self._engine_array
        return data.dtype if type(data) is np.ndarray else _engine_of(data).dtype_of(data)

    @dtype.setter
    def dtype(self, value: Any) -> None:
        data = self._engine_array
        if type(data) is np.ndarray:
            view = data.view()  # the NumPy object may be the caller's own: retype a view of it
            view.dtype = value  # NumPy raises (and warns) as for its own array
            self._engine_array = view
        else:
            self._engine_array = self.view(value)._engine_array

    @property
    def ndim(self) -> int:
        return len(self._engine_array.shape)

    @property
    def size(self) -> int:
        data = self._engine_array
        if type(data) is np.ndarray:
            return data.size
        n = math.prod(data.shape)  # (NumPy's prod takes 3 µs, on every call that asks)
        return n if type(n) is int else int(np.prod(data.shape, dtype=np.int64))  # Dask's unknown (NaN) lengths

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        return self.__array__().strides if not self.device.is_host else self._engine_array.strides

    @strides.setter
    def strides(self, value: Any) -> None:  # deprecated in NumPy 2.4, which warns as it sets them
        data = self._engine_array
        view = (data if type(data) is np.ndarray else self.__array__()).view()  # the caller's object stays
        view.strides = value  # NumPy raises (and warns) as for its own array
        self._engine_array = view if type(data) is np.ndarray else _engine_of(data).from_host(view)

    @property
    def flags(self) -> Any:
        return self._engine_array.flags if type(self._engine_array) is np.ndarray else self.__array__().flags

    def setflags(self, write: Any = None, align: Any = None, uic: Any = None) -> None:
        """NumPy's ``setflags``, on the host data (what ``flags`` reports)."""
        data = self._engine_array
        if type(data) is not np.ndarray:
            raise ValueError(f"the flags of an array held by {self.device} cannot be set: bring it to the host first")
        data.setflags(write, align, uic)

    @property
    def data(self) -> memoryview:
        """The host memory as a ``memoryview`` (of a host copy, for data a device holds)."""
        return self.__array__().data

    @property
    def base(self) -> Any:
        """NumPy's ``base`` of the host data: None where it owns its memory, else the owner. A
        view taken of a dispatch array (``a[...]``, ``a.view()``, ``a.reshape(...)``) names that
        array, or that array's own base where it is a view too, as NumPy's view does; an owner
        no dispatch array is known to hold comes as a dispatch array (one wrapper per owner while
        it lives, so that two views of one array have one base). None for data a device holds."""
        data = self._engine_array
        if type(data) is not np.ndarray:
            return None
        owner = data.base
        if type(owner) is not np.ndarray:
            return None if _own_torch_memory(data, owner) else owner
        known = getattr(self, "_base", None)
        if known is not None and known._engine_array is owner:  # (that array may hold other data since)
            return known
        wrapper = _BASES.get(id(owner))
        if wrapper is None or wrapper._engine_array is not owner:
            wrapper = _BASES[id(owner)] = held(owner)
        return wrapper

    @property
    def T(self) -> ndarray:
        return self.transpose()

    @property
    def mT(self) -> ndarray:
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    @property
    def real(self) -> ndarray:
        return _call.call(op_named("real"), (self,), {})

    @real.setter
    def real(self, value: Any) -> None:
        self._mutate_host(lambda h: setattr(h, "real", _host_value(value)))

    @property
    def imag(self) -> ndarray:
        return _call.call(op_named("imag"), (self,), {})

    @imag.setter
    def imag(self, value: Any) -> None:
        self._mutate_host(lambda h: setattr(h, "imag", _host_value(value)))

    @property
    def flat(self) -> Any:
        """A flat iterator over the elements, indexed as NumPy's ``flatiter`` (integers, slices,
        boolean and integer arrays); for device data it reads through a host copy and writes
        back to the device."""
        return _Flat(self)

    @flat.setter
    def flat(self, value: Any) -> None:  # ``a.flat = v``: NumPy's, every element written (v repeated)
        value = _host_value(value)
        self._mutate_host(lambda h: setattr(h, "flat", value))

    # ---- indexing -------------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        data = self._engine_array
        # (an index array on a device goes to the router)
        if type(data) is np.ndarray and STATE.plain \
                and not (type(key) is ndarray and type(key._engine_array) is not _ND):
            return viewed(data[_host_key(key)], self)
        if type(data) is not _ND and _routed():
            del data  # (for ``_moves_home``'s count of who holds it)
            if self._moves_home() or self._element_home(key):
                return self[key]  # (on the host now)
            if STATE.plain:
                view = _call.device_view(self, key)
                if view is not _call._MISS:
                    return view
            else:  # routed, and recorded: its view linked to this array as the fast path links it
                got = _call.call(GETITEM, (self, key), {})
                if type(got) is ndarray and self._engine_array.nbytes >= mirrors.MIN_BYTES:
                    mirrors.viewed(got._engine_array, self._engine_array)
                return got
        return _call.call(GETITEM, (self, key), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        data = self._engine_array
        if type(data) is np.ndarray and not (type(value) is ndarray and self._moves_for(value, 1)):
            mirrors.wrote(data)  # (mirrors)
            # an object array holds the dispatch array itself, as NumPy's holds the array given (NumPy's own
            # 0-d array where one is given: its casts of objects read that as a scalar, never an array-like)
            held_as_is = type(value) is ndarray and data.dtype.kind == "O" and value.ndim
            if type(value) is list or type(value) is tuple:
                try:
                    data[_host_key(key)] = value
                except ValueError as error:  # an object in it whose __array__ gives a dispatch array
                    if not refused(error):
                        raise
                    data[_host_key(key)] = nested(value)  # such objects shown to NumPy in proxies
                    restore(data)  # an object array holds the objects themselves, as NumPy's does
                return
            data[_host_key(key)] = value if held_as_is else _host_value(value)
            return
        if type(data) is not np.ndarray and _routed():
            del data  # (for ``_element_home``'s count of who holds it)
            if self._element_home(key):
                self[key] = value  # (on the host now)
                return
        else:
            del data  # (a moved array's host memory is let go)
        _call.call(SETITEM, (self, key, value), {})

    def __delitem__(self, key: Any) -> None:
        raise ValueError("cannot delete array elements")  # NumPy's error

    def __len__(self) -> int:
        shape = self._engine_array.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __iter__(self):
        if not self._engine_array.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._engine_array.shape[0]):
            yield self[i]

    def __contains__(self, value: Any) -> bool:
        return bool((self == value).any())

    # ---- conversion to Python -------------------------------------------------------------------

    def item(self, *args: Any) -> Any:
        data = self._engine_array
        if args and type(data) is not np.ndarray and not mirrors.readable(data):
            return _engine_of(data).item(data, args)  # one element read back (Dask), not the array
        return _read(self).item(*args)

    def tolist(self) -> Any:
        return _read(self).tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return _read(self).tobytes(order)

    def tofile(self, fid: Any, sep: str = "", format: str = "%s") -> None:
        self.__array__().tofile(fid, sep, format)

    def dump(self, file: Any) -> None:
        self.__array__().dump(file)

    def dumps(self) -> bytes:
        return self.__array__().dumps()

    def getfield(self, dtype: Any, offset: int = 0) -> Any:
        return wrap_host(self.__array__().getfield(dtype, offset))  # a view of the host data, as NumPy's

    def setfield(self, val: Any, dtype: Any, offset: int = 0) -> None:
        self._mutate_host(lambda h: h.setfield(_host_value(val), dtype, offset))

    @property
    def ctypes(self) -> Any:
        """NumPy's ``ctypes`` of the host data (pointers to the data itself); absent for data a
        device holds, whose host copy would go stale behind a pointer."""
        if type(self._engine_array) is not np.ndarray:
            raise AttributeError(_DEVICE_HELD)
        described = self.__array__().ctypes
        described._arr = self  # the pointers it makes (data_as, _as_parameter_) keep this array alive, as NumPy's
        return described

    def __sizeof__(self) -> int:
        """``sys.getsizeof``: the wrapper and what it holds (NumPy's counts the memory an array owns)."""
        return builtins.object.__sizeof__(self) + self._engine_array.__sizeof__()

    def __bool__(self) -> bool:
        return bool(self.__array__())

    def __float__(self) -> float:
        return float(self.__array__())

    def __int__(self) -> int:
        return int(self.__array__())

    def __complex__(self) -> complex:
        return complex(self.__array__())

    def __index__(self) -> int:
        return operator.index(self.__array__())

    def __repr__(self) -> str:
        data = self._engine_array
        return _engine_of(data).text(data, repr) if _lazy(data) else repr(_read(self))

    def __str__(self) -> str:
        data = self._engine_array
        return _engine_of(data).text(data, str) if _lazy(data) else str(_read(self))

    def __format__(self, spec: str) -> str:
        return format(self.__array__(), spec)

    __hash__ = None  # type: ignore[assignment]

    # ---- copies and pickling ----------------------------------------------------------------------

    def __reduce__(self) -> tuple:
        return (_rebuild, (self.__array__(), str(self.device)))

    def __setstate__(self, state: tuple) -> None:
        """NumPy's: the array becomes the one ``state`` describes (as ``numpy.ndarray.__reduce__``
        gives it), on the host."""
        host = np.empty(0)
        host.__setstate__(state)
        self._engine_array = host

    def __array_finalize__(self, obj: Any, /) -> None:
        """NumPy's hook for subclasses, called on views and results of theirs: nothing to do here."""

    def __copy__(self) -> ndarray:
        return self.copy("K")  # NumPy's keeps the memory order (a Fortran array stays one)

    def __deepcopy__(self, memo: dict) -> ndarray:
        data = self._engine_array
        if type(data) is np.ndarray:  # NumPy's: the order kept, an object array's elements deep-copied
            return held(data.__deepcopy__(memo))
        return self.copy("K")

    def persist(self) -> ndarray:
        """Compute a Dask-held array's chunks and keep them in the cluster's memory (Dask's
        ``persist``); any other array is returned as it is."""
        if self.device != DASK:
            return self
        client = cluster.client()
        data = client.persist(self._engine_array) if client is not None else self._engine_array.persist()
        return held(data, type(self))

    def copy(self, order: str = "C") -> ndarray:
        data = self._engine_array
        if type(data) is np.ndarray and (STATE.floored or order != "C"):
            return wrap_host(data.copy(order))  # a copy is made where its data is
        # (a forced target: ``numpy.copy``, whose order is "K": the method's "C" for data in C order)
        kwargs = {} if order == "C" and _c_contiguous(data) else {"order": order}
        return _call.call(_COPY, (self,), kwargs)

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> ndarray:
        data = self._engine_array
        if type(data) is np.ndarray:
            cast = data.astype(dtype, order, casting, subok, copy)
            return self if cast is data else viewed(cast, self)  # NumPy's copy=False gives the array itself
        return _call.call(op_named("astype"), (self, dtype), {"copy": copy})

    def view(self, dtype: Any = None, type: Any = None) -> Any:
        if isinstance(dtype, builtins.type) and issubclass(dtype, (np.ndarray, ndarray)):
            dtype, type = None, dtype  # NumPy reads view(np.matrix) as a type
        if type is not None and not issubclass(type, Wrapper):
            # A view as a NumPy subclass (np.matrix, a recarray) is NumPy's own object.
            host = self.__array__()
            return host.view(type) if dtype is None else host.view(dtype, type)
        data = self._engine_array
        if builtins.type(data) is np.ndarray:  # `type` is the parameter here
            return viewed(data.view() if dtype is None else data.view(dtype), self)
        return wrap(_engine_of(data).view(data, None if dtype is None else np.dtype(dtype)))

    def fill(self, value: Any) -> None:
        data = self._engine_array
        if type(data) is np.ndarray:
            mirrors.wrote(data)  # (mirrors)
            data.fill(_host_value(value))
        else:
            self[...] = value

    # ---- shape methods (NumPy's varargs spellings) -----------------------------------------------

    def reshape(self, *shape: Any, order: str = "C", copy: bool | None = None) -> ndarray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        data = self._engine_array
        if type(data) is np.ndarray:
            return viewed(data.reshape(shape, order=order, copy=copy) if copy is not None
                          else data.reshape(shape, order=order), self)
        return _call.call(op_named("reshape"), (self, shape), {"order": order} if order != "C" else {})

    def transpose(self, *axes: Any) -> ndarray:
        if not axes:
            axes = None
        elif len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list, Wrapper, np.ndarray))):
            axes = axes[0]  # one sequence of axes (an array of them too), or None
        if isinstance(axes, Wrapper):
            axes = _host_value(axes)
        data = self._engine_array
        if type(data) is np.ndarray:
            return viewed(data.transpose(axes), self)
        return _call.call(op_named("transpose"), (self, axes), {})

    def ravel(self, order: str = "C") -> ndarray:
        data = self._engine_array
        if type(data) is np.ndarray:  # NumPy's: a view where the order allows one, else a copy
            return viewed(data.ravel(order), self)
        return _call.call(op_named("ravel"), (self, order), {}) if order != "C" else self.reshape(-1)

    def flatten(self, order: str = "C") -> ndarray:
        data = self._engine_array
        return wrap_host(data.flatten(order)) if type(data) is np.ndarray else self.ravel(order).copy()

    def squeeze(self, axis: Any = None) -> ndarray:
        return _call.call(op_named("squeeze"), (self, axis), {})

    def swapaxes(self, axis1: int, axis2: int) -> ndarray:
        return _call.call(op_named("swapaxes"), (self, axis1, axis2), {})

    def resize(self, *new_shape: Any, refcheck: bool = True) -> None:
        refcheck = operator.index(refcheck)  # as NumPy reads it: "hi" or None is a TypeError
        if not new_shape or (len(new_shape) == 1 and new_shape[0] is None):  # NumPy's: nothing to do
            return
        if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list)):
            new_shape = tuple(new_shape[0])
        new_shape = tuple(operator.index(n) for n in new_shape)  # NumPy's TypeError first, for a shape like "hi"
        if type(self._engine_array) is np.ndarray and refcheck:
            if sys.getrefcount(self) > _ONE_NAME:  # another name holds this array: NumPy refuses
                raise ValueError("cannot resize an array that references or is referenced\nby another object in "
                                 "this way.\nUse the np.resize function or refcheck=False")
            mirrors.wrote(self._engine_array)  # (mirrors)
            # NumPy's own check: views of the data, data not its own
            self._engine_array.resize(new_shape, refcheck=True)
            return
        self._mutate_host(lambda h: h.resize(new_shape, refcheck=False))

    def byteswap(self, inplace: bool = False) -> ndarray:
        if inplace:
            self._mutate_host(lambda h: h.byteswap(True))
            return self
        return wrap_host(self.__array__().byteswap())

    # ---- in-place methods ------------------------------------------------------------------------

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> None:
        axis = operator.index(axis)  # in place, as NumPy's method: an integer axis (None is a TypeError)
        kwargs = {"axis": axis, "kind": kind, "order": order}
        if stable is not None:
            kwargs["stable"] = stable
        self._assign(_call.call(op_named("sort"), (self,), kwargs))

    def partition(self, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None) -> None:
        axis = operator.index(axis)  # in place, as NumPy's method: an integer axis (None is a TypeError)
        self._assign(_call.call(op_named("partition"), (self, kth), {"axis": axis, "kind": kind, "order": order}))

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        _call.call(op_named("put"), (self, indices, values), {"mode": mode})

    def _assign(self, value: Any) -> None:
        """Write ``value`` (any array) into this array's own memory, keeping its identity and
        every view of it."""
        value = value._engine_array if isinstance(value, Wrapper) else value
        data = self._engine_array
        if type(data) is np.ndarray:
            src = value if type(value) is np.ndarray else _host(value)  # _host knows device arrays by library
            mirrors.wrote(data)  # (mirrors)
            np.copyto(data, src, casting="unsafe")
        else:
            mirrors.wrote(data)  # (mirrors)
            _engine_of(data).assign(data, value)

    def _moves_for(self, value: Any, holders: int) -> bool:
        """Move this host array to the device that computed ``value`` (``_moves``), for a write of
        ``value`` into it that covers at least half of it: the array crosses once, where the
        value would cross back at every such write. ``holders``: the caller's own references
        to ``self._engine_array``."""
        native = value._engine_array if isinstance(value, Wrapper) else value
        if type(native) is np.ndarray or not hasattr(native, "nbytes") or 2 * native.nbytes < self._engine_array.nbytes:
            return False
        return self._moves(_engine_of(native), holders)

    def _moves(self, engine: Any, holders: int = 0, replaced: Any = None) -> bool:
        """Make ``engine`` (a device's) this host array's home, where that changes nothing a
        program can see: the array owns its memory, is at least ``mirrors.MIN_BYTES`` (smaller
        data is cheaper to copy at each crossing) and nothing else holds it, neither a view nor
        the caller (``holders``: references to ``self._engine_array`` the callers hold). ``replaced``:
        ``engine``'s array that replaces the whole content (an ``out=`` result), else it is
        copied there. Whether it moved."""
        data = self._engine_array
        device = engine.device
        if (type(data) is not np.ndarray or data.base is not None or device.is_host or device == DASK
                or data.nbytes < mirrors.MIN_BYTES or not mirrors.keepable(data)):
            return False
        kept = mirrors.lookup(data, engine) if replaced is None else replaced
        mirrors.wrote(data)  # its copies go (a kept one is the array's own from now on)
        if _rc(data) != _alone_refs + holders:
            return False
        try:
            self._engine_array = kept if kept is not None else engine.from_host(data)
        except targets.Unsupported:
            return False
        creations.moved(data, engine)  # (creations) made by a creation function: its line makes its next there
        return True

    def _moves_home(self) -> bool:
        """Make the host this device array's home where its host copy has served many small views
        read there (``mirrors.home``: rows of drawn data read in a Python loop), where that
        changes nothing a program can see: CuPy memory that nothing else holds (no view of it
        alive), all of it the array's (it owns it, or is its owner reshaped: a draw). Its device
        data stays, as the host array's device copy. Whether it moved."""
        data = self._engine_array
        if not mirrors.homes() or type(data).__module__ != "cupy":  # (torch's views keep no count of their holders)
            return False
        root = data.base
        if type(root) is type(data) and (root.nbytes != data.nbytes or _rc(root) != _ROOT_REFS
                                         or not (data.flags.c_contiguous or data.flags.f_contiguous)):
            return False  # (CuPy's views hold their memory's owner: ``root``, counted)
        if _rc(data) != _alone_refs:
            return False
        host = mirrors.home(data)
        if host is None:
            return False
        creations.returned(data)  # (creations)
        self._engine_array = host
        mirrors.keep(host, _engine_of(data), data)
        return True

    def _element_home(self, key: Any) -> bool:
        """Make the host this small device array's home where its elements are read or written one
        by one from Python (``z[i] = lam * means[i] + (1 - lam) * z[i - 1]``: each a round trip to
        the device), once those have cost about what copying it costs (``mirrors.element_read``),
        where that changes nothing a program can see: memory under ``mirrors.MIN_BYTES`` on a
        device (or larger, where a creation made it there for its line's history: ``creations``),
        all of it the array's, that nothing else holds. Whether it moved."""
        data = self._engine_array
        if ((data.nbytes >= mirrors.MIN_BYTES and not creations.guessed(data))
                or not _element_key(key, len(data.shape)) or device_of(data).is_host or not mirrors.element_read(data)):
            return False
        if not _sole(data) or _rc(data) != _alone_refs:
            return False
        creations.returned(data)  # (creations) a large array made on a device for its line's history
        self._engine_array = mirrors.homed(data)
        return True

    def _mutate_host(self, change: Any) -> None:
        """Apply an in-place NumPy change; device data makes a round trip through the host."""
        data = self._engine_array
        if type(data) is np.ndarray:
            mirrors.wrote(data)  # (mirrors)
            change(data)
            return
        host = _host(data)
        change(host)
        if host.shape != tuple(data.shape):
            self._engine_array = _engine_of(data).from_host(host)
        else:
            self._assign(host)

    # ---- operators ------------------------------------------------------------------------------
    # Generated below from one table: (name, ufunc, reflected).


class _Subclassed(np.ndarray):
    """What a class a program derives from ``dispatch.ndarray`` derives from: NumPy's ndarray,
    whose ``view`` reads ``dispatch.ndarray`` as NumPy's (``self.view(np.ndarray)`` in the
    class's own methods, written under ``import dispatch as np``: NumPy would take the wrapper
    for a dtype)."""

    __slots__ = ()

    def view(self, *args: Any, **kwargs: Any) -> Any:
        args = tuple(np.ndarray if a is ndarray else a for a in args)
        for name in ("dtype", "type"):
            if kwargs.get(name) is ndarray:
                kwargs[name] = np.ndarray
        return super().view(*args, **kwargs)


class _DeviceScalar(ndarray, wrapper=True):
    """A 0-d result that NumPy would return as a scalar, left on its device until it is read:
    it prints, formats and hashes as NumPy's scalar would."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(self.__array__()[()])

    def __str__(self) -> str:
        return str(self.__array__()[()])

    def __hash__(self) -> int:
        return hash(self.__array__()[()])


class _Flat:
    """``a.flat``: NumPy's ``flatiter`` indexing (integers, slices, boolean and integer arrays,
    dispatch arrays among them) on the host data; for device data, reads come from a host copy and
    writes go to the device (through the host, as ``_mutate_host`` does), so ``a.flat[i] = v``
    is not lost. Iterating it is iterating NumPy's own flatiter (its ``index``, ``coords``)."""

    __slots__ = ("_it", "base")

    def __init__(self, base: ndarray) -> None:
        self.base = base
        data = base._engine_array
        # NumPy's iterator over host data, made now as NumPy's (which refuses more than 32 dimensions)
        self._it = data.flat if type(data) is np.ndarray else None

    def _iterator(self) -> Any:
        if self._it is None:
            self._it = self.base.__array__().flat
        return self._it

    def __getitem__(self, key: Any) -> Any:
        return wrap_host(self.base.__array__().flat[_host_key(key)])

    def __setitem__(self, key: Any, value: Any) -> None:
        key, value = _host_key(key), _host_value(value)
        self.base._mutate_host(lambda h: h.flat.__setitem__(key, value))

    def __delitem__(self, key: Any) -> None:
        raise TypeError("Cannot delete iterator elements")

    def __iter__(self) -> _Flat:
        return self

    def __next__(self) -> Any:
        return next(self._iterator())

    @property
    def index(self) -> int:
        return self._iterator().index

    @property
    def coords(self) -> tuple[int, ...]:
        return self._iterator().coords

    def __len__(self) -> int:
        return self.base.size

    def copy(self) -> ndarray:
        return wrap_host(self.base.__array__().flat.copy())

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return self.base.__array__().flat.__array__(dtype, copy=copy)  # NumPy's: a view where it can be one


def device_scalar(native: Any) -> ndarray:
    """Wrap a 0-d device array that stands for a NumPy scalar."""
    return held(native, _DeviceScalar)


def _handled(x: Any) -> bool:
    return isinstance(x, (Wrapper, np.ndarray, int, float, complex, str, bytes, np.generic)) or x is None or \
        is_backend_type(type(x)) or isinstance(x, (list, tuple)) or _plain_object(type(x))


def _plain_object(kind: type) -> bool:
    """Whether NumPy's operators take an object of this type as it is (an object array's element,
    a ``Decimal``, a ``Fraction``): it neither overrides NumPy's ufuncs nor asks to go first with
    an ``__array_priority__`` (NumPy's ndarray defers to those, and so does dispatch's)."""
    return not hasattr(kind, "__array_ufunc__") and getattr(kind, "__array_priority__", 0.0) <= 0.0


def _ufunc_operand(kind: type) -> bool:
    """Whether NumPy's ufuncs take an object of this type as NumPy's ndarray does: it overrides
    no ufunc (an ``__array_priority__`` alone orders operators and whose ``__array_wrap__`` wraps)."""
    return not hasattr(kind, "__array_ufunc__") and not is_backend_type(kind)


_HANDLED_TYPES = (Wrapper, np.ndarray)
# id(owner) -> the wrapper ``base`` gave for it, while that wrapper lives (it keeps the owner, so the id)
_BASES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
# Dtype kinds NumPy reads back exactly from the buffer protocol and the interfaces: booleans,
# numbers, bytes, str and objects. Void and structured arrays lose their alignment or come back
# as padding, datetimes their units; StringDType has no format NumPy reads back.
_EXPORTED_KINDS = frozenset("biufcSUO")
_THROUGH_ARRAY = "void, structured, datetime, timedelta and string-dtype arrays are read through __array__"
_DEVICE_HELD = "an array a device holds has no host memory to describe: numpy.asarray(x) makes a host copy"


# ---- wrapping results -------------------------------------------------------------------------

_new = object.__new__


def held(data: Any, cls: type | None = None) -> ndarray:
    """A ``dispatch.ndarray`` (or ``cls``) holding ``data``, an engine's array, as it is: no check
    and no conversion (the one place arrays are made around data already known to fit)."""
    obj = _new(ndarray if cls is None else cls)
    obj._engine_array = data
    return obj


def wrap_host(result: Any) -> Any:
    """A NumPy result as ``dispatch.ndarray``; NumPy scalars stay scalars, like NumPy's."""
    if type(result) is np.ndarray:
        return held(result)
    return result


def _own_torch_memory(data: np.ndarray, owner: Any) -> bool:
    """Whether ``owner``, ``data``'s base, is a torch tensor (a torch-cpu result, shared with
    NumPy) whose memory is exactly ``data``'s: the array owns it, as NumPy's result would (its
    ``base`` is None, never the tensor)."""
    if library_of(type(owner)) != "torch":
        return False
    storage = owner.untyped_storage()
    return storage.data_ptr() == data.__array_interface__["data"][0] and storage.nbytes() == data.nbytes


def viewed(result: Any, of: Any) -> Any:
    """NumPy's ``result`` of a call on ``of`` (a dispatch array's host data) as ``wrap_host`` gives
    it; where it is a view of ``of``'s memory, it names ``of`` as its ``base`` (or ``of``'s own
    base, where NumPy's base of both is one owner) and holds it while it lives, as NumPy's view
    holds its base (``sys.getrefcount`` sees it). The compiled path does the same (name_base)."""
    if type(result) is not np.ndarray:
        return result
    obj = held(result)
    owner = result.base
    if owner is not None and isinstance(of, Wrapper):
        data = of._engine_array
        if owner is data:
            obj._base = of
        elif type(data) is np.ndarray and owner is data.base:
            base = getattr(of, "_base", None)
            if base is not None:
                obj._base = base
    return obj


def wrap(result: Any, out_of: tuple | None = None) -> Any:
    """Wrap whatever a target returned: arrays become ``dispatch.ndarray`` on their device,
    tuples (also named ones) and lists are wrapped item by item, scalars stay scalars.

    ``out_of`` is the call's ``(args, kwargs)``: a result that is the memory of an ``out=``
    array, or an argument NumPy handed back as it is (``asarray``, ``atleast_1d``,
    ``ascontiguousarray`` of a contiguous array), returns that array itself, as NumPy does.
    """
    if out_of is not None:
        for a in out_of[0]:
            if type(a) is ndarray and a._engine_array is result:
                return a
        out = out_of[1].get("out")
        if out is not None:
            outs = out if isinstance(out, tuple) else (out,)
            for o in outs:
                # a NumPy out= comes back itself
                if o is result or (isinstance(o, Wrapper) and o._engine_array is result):
                    return o
            if isinstance(result, tuple) and len(result) == len(outs):
                return tuple(o if isinstance(o, (Wrapper, np.ndarray)) else wrap(r)
                             for o, r in zip(outs, result, strict=True))
    kind = type(result)
    if kind is np.ndarray:
        owner = result.base
        if out_of is not None and owner is not None:  # a view of an argument's memory names it (viewed)
            for a in out_of[0]:
                if type(a) is ndarray and (a._engine_array is owner
                                           or (type(a._engine_array) is np.ndarray and a._engine_array.base is owner)):
                    return viewed(result, a)
        return held(result)
    if isinstance(result, np.generic):
        return result
    if kind is tuple or kind is list:  # (frexp(x, o1, o2): each out comes back itself)
        return kind(wrap(r, out_of) for r in result)
    if isinstance(result, tuple) and hasattr(result, "_fields"):
        return kind(*(wrap(r, out_of) for r in result))
    if isinstance(result, (np.generic, Wrapper)) or result is None:
        return result
    module = kind.__module__
    if module.startswith("cupy") or module.startswith("torch") or module.startswith("dask.array"):
        if not hasattr(result, "shape"):
            return result
        return ndarray._from_native(result)
    return result


def _rebuild(host: np.ndarray, device: str) -> ndarray:
    arr = wrap_host(host)
    if device != "cpu":
        try:
            return arr.to(device)
        except (RuntimeError, ValueError):  # the device is not on this machine: stay on the host
            return arr
    return arr


# ---- helpers shared with the call path -------------------------------------------------------------


_host = targets.host_array


def _read(x: ndarray) -> np.ndarray:
    """``x``'s data on the host, to read and not to hand out: device data through its kept host
    copy where one is valid (``mirrors.read``: no transfer, and no copy to hand out)."""
    data = x._engine_array
    if type(data) is np.ndarray:
        return data
    return mirrors.read(data)


def _lazy(data: Any) -> bool:
    """Data not in memory yet (Dask's): printed by its engine (the corners computed, not the whole)."""
    return type(data) is not np.ndarray and device_of(data) == DASK


def _host_value(value: Any) -> Any:
    if isinstance(value, Wrapper):
        data = value._engine_array
        return data if type(data) is np.ndarray else _host(data)
    return for_numpy(value)  # an object read through __array__ alone: NumPy's array out of it


_PLAIN_KEYS = frozenset({int, slice, type(None), type(Ellipsis)})


def _host_key(key: Any) -> Any:
    kind = type(key)
    if kind is int or kind is slice or key is None or key is Ellipsis:
        return key
    if kind is tuple:
        for k in key:
            if type(k) not in _PLAIN_KEYS:
                return tuple(_host_value(k) if isinstance(k, Wrapper) else for_numpy(k) for k in key)
        return key  # slices and integers, the common case, as they are
    if isinstance(key, Wrapper):
        return _host_value(key)
    if kind is list:
        return [_host_value(k) if isinstance(k, Wrapper) else k for k in key]
    return for_numpy(key)


_torch_cpu_to_numpy = torch_cpu_to_numpy
_engine_of = targets.engine_of


def _target_for_device(device: Device) -> Any:
    if device.is_host:
        return targets.get("numpy")
    names = targets.registry.names_on(device.kind)
    for name in names:
        target = targets.probe(name)
        if target is not None and target.device == device:
            return target
    reasons = "; ".join(f"{n}: {targets.unavailable().get(n, 'on another device')}" for n in names)
    raise RuntimeError(f"no target can hold arrays on {device}: {reasons}")


# ---- operators, generated from one table -----------------------------------------------------------

_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift", "divmod": "divmod",
}
_COMPARE = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
            "eq": "equal", "ne": "not_equal"}
_MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}  # the comparison Python tries reflected
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}


_ND = np.ndarray
_PY_SCALARS = (float, int, bool, complex)
# NumPy function or ufunc -> its op, for the compiled protocol methods (filled by the Python ones)
_PROTOCOL_OPS: dict[Any, Any] = {}


# NumPy computes ``a + b + c`` in place in the temporary ``a + b`` (arrays of 256 KiB or more):
# one buffer instead of two, and no fresh pages to fault in. Wrapped in a dispatch array, the
# temporary is hidden from NumPy, so dispatch does it: a host operand whose wrapper only the
# expression holds (the reference count a temporary shows, measured at import) and which owns
# its memory, alone, takes the result when NumPy's result would have its dtype and shape.
_ELIDE_BYTES = 256 * 1024
_temporary_refs: int | None = None  # None: not measured, or this Python cannot tell temporaries apart
_temporary_right_refs: int | None = None  # the same on the right operand (``_COMMUTES``)
_temporary_unary_refs: int | None = None  # the same on a unary operator's (``_OWN_TEMPORARY``)
_owned_refs = -1  # what ``_elides`` sees on an array only its wrapper holds (measured at import)
_rc = sys.getrefcount
_alone_refs = -1  # what ``_moves`` sees on an array only its wrapper holds (measured at import)
_ROOT_REFS = 3  # what ``_moves_home`` sees on memory's owner held by one view: its ``base``, a local, the argument


def _routed() -> bool:
    """Whether no target is forced here: where an array lives is then dispatch's to choose (a trace
    changes nothing there)."""
    return (STATE.floored and not STATE.host_only) or STATE.forced_name() is None


def _element_key(key: Any, ndim: int) -> bool:
    """Whether ``key`` names one element of an array of ``ndim`` axes: integers, one per axis."""
    if type(key) is tuple:
        return len(key) == ndim and all(type(k) is int or isinstance(k, np.integer) for k in key)
    return ndim == 1 and (type(key) is int or isinstance(key, np.integer))


def _sole(data: Any) -> bool:
    """Whether device ``data`` owns all its memory and no view of it is alive: CuPy's views hold
    their memory's owner (``base``), torch's share its storage (counted by torch)."""
    library = library_of(type(data))
    if library == "cupy":
        return data.base is None
    if library == "torch":
        return data._base is None and _storage_users(data) == _TORCH_ALONE
    return False


def _storage_users(data: Any) -> int:
    """How many tensors share ``data``'s storage (with the storage object asked for it)."""
    return sys.modules["torch"]._C._storage_Use_Count(data.untyped_storage()._cdata)


_TORCH_ALONE = 2  # ``_storage_users`` of a tensor no other tensor shares memory with: it, and the storage asked


_ALONE = object()  # ``_elides``'s other operand for a unary operator: there is none


def _elides(func: Any, data: np.ndarray, odata: Any = _ALONE, data_first: bool = True) -> bool:
    if (func is None or func.nout != 1 or func.signature is not None or data.base is not None
            or not data.flags.writeable or _rc(data) != _owned_refs):
        return False  # divmod's two results; matmul's core dimensions; a view; an array someone else holds
    okind = type(odata)
    if odata is _ALONE:  # NumPy's unary elision takes a number's dtype only (``PyArray_ISNUMBER``)
        if data.dtype.kind not in "biufc":
            return False
        types: tuple = (data.dtype,)
    elif okind is _ND:
        if odata.ndim > data.ndim or np.broadcast_shapes(data.shape, odata.shape) != data.shape:
            return False
        types = (data.dtype, odata.dtype) if data_first else (odata.dtype, data.dtype)
    else:
        other_type = np.dtype(bool) if okind is bool else okind  # Python's bool is not weak (NEP 50)
        types = (data.dtype, other_type) if data_first else (other_type, data.dtype)
    try:
        if func.resolve_dtypes((*types, None))[-1] != data.dtype:
            return False  # (a unary operator's: not the magnitude of a complex array)
    except Exception:  # NumPy has no loop for these: the plain call raises NumPy's error
        return False
    return _compiled.from_interpreter()  # not an element NumPy's object loop holds (borrowed, not a temporary)


def _c_contiguous(data: Any) -> bool:
    """Whether an engine's array lies in C order (NumPy's and CuPy's flags, torch's
    ``is_contiguous``; a Dask array has no layout: it computes to C order)."""
    flags = getattr(data, "flags", None)
    if flags is not None and hasattr(flags, "c_contiguous"):
        return bool(flags.c_contiguous)
    is_contiguous = getattr(data, "is_contiguous", None)
    return bool(is_contiguous()) if callable(is_contiguous) else True


# The operators whose temporary right operand NumPy writes the result into (number.c's
# ``try_binary_elide(..., commutative=1)``), as it does a temporary left operand of every operator.
_COMMUTES = frozenset({"add", "multiply", "bitwise_and", "bitwise_or", "bitwise_xor"})


def _binary(ufunc_name: str, compare: Any = None, mirrored: str = "") -> tuple[Any, Any, Any, Any]:
    """The operator's forward, reflected and in-place methods; ``compare`` is NumPy's own
    comparison operator (``operator.eq``), which also compares void and structured arrays
    (their ufunc has no loop for them). ``mirrored``: the reflected method's name (``__radd__``,
    ``__gt__`` for ``<``), which a NumPy subclass's own goes first by, as Python lets a subclass's."""
    op = POWER_OPERATOR if ufunc_name == "power" else op_named(ufunc_name)
    func, ufunc, blas = compare or op.func, op.ufunc, op.blas
    commutes = ufunc_name in _COMMUTES

    def forward(self: ndarray, other: Any) -> Any:
        if compare is not None and type(self._engine_array) is _ND and self._engine_array.dtype.kind == "V":
            return wrap(compare(self._engine_array, _host_value(other)))  # records compare on NumPy, field by field
        # The hot path, inlined: host data under the op's floor goes straight to NumPy.
        kind = type(other)
        if kind is ndarray:
            odata = other._engine_array
        elif kind is _ND or kind in _PY_SCALARS:
            odata = other
        elif isinstance(other, _ND) and getattr(kind, mirrored, None) is not getattr(_ND, mirrored, None):
            return NotImplemented  # a NumPy subclass's own reflected method goes first
        elif not _handled(other):  # NumPy's rule: defer to it, or call the ufunc, which asks its override
            attr = getattr(kind, "__array_ufunc__", None)
            return NotImplemented if attr is None or ufunc is None else ufunc(self, other)
        else:
            return _call.call_fast_ufunc(op, self, other)
        data = self._engine_array
        okind = type(odata)
        if type(data) is not _ND or (okind is not _ND and okind not in _PY_SCALARS):
            return _call.call_fast_ufunc(op, self, other)
        into = self if (data.nbytes >= _ELIDE_BYTES and _rc(self) == _temporary_refs
                        and _elides(ufunc, data, odata, True)) else None
        if (into is None and commutes and kind is ndarray and okind is _ND and odata.nbytes >= _ELIDE_BYTES
                and _rc(other) == _temporary_right_refs and _elides(ufunc, odata, data, False)):
            into = other  # ``a + b * c``: NumPy's commutative operators write into a temporary right operand too
        if not STATE.plain:  # forced or traced: NumPy, where it runs the call, still computes into the temporary
            return _call.call(op, (self, other), {}, into=into) if into is not None \
                else _call.call_fast_ufunc(op, self, other)
        n = data.size
        if okind is _ND:
            if odata.size > n:
                n = odata.size
            if data.shape != odata.shape:
                n = _call.broadcast_size([data.shape, odata.shape], n)
        if n > op.floor and not host_shortcut(op, n):  # (the rule's first test inlined)
            return _call.call(op, (self, other), {}, into=into)
        if blas:
            blas_spin.ran()
        if into is not None:
            func(data, odata, out=into._engine_array)
            return into
        result = func(data, odata)
        if type(result) is _ND:
            return held(result)
        return wrap(result)  # a scalar, or divmod's pair

    def reflected(self: ndarray, other: Any) -> Any:
        data = self._engine_array
        if type(other) in _PY_SCALARS and type(data) is _ND:  # ``alpha * x``: forward's hot path
            elide = data.nbytes >= _ELIDE_BYTES and _rc(self) == _temporary_refs and _elides(ufunc, data, other, False)
            if not STATE.plain:  # forced or traced, as ``forward``
                return _call.call(op, (other, self), {}, into=self) if elide else _call.call_fast_ufunc(op, other, self)
            n = data.size
            if n > op.floor and not host_shortcut(op, n):
                return _call.call(op, (other, self), {}, into=self if elide else None)
            if elide:
                func(other, data, out=data)  # ``2.0 * (a + b)``: in the temporary, as NumPy would
                return self
            result = func(other, data)
            if type(result) is _ND:
                return held(result)
            return wrap(result)
        if not _handled(other):  # NumPy's reflected operator never defers: the ufunc, which asks its override
            return NotImplemented if ufunc is None else ufunc(other, self)
        return _call.call_fast_ufunc(op, other, self)

    def inplace(self: ndarray, other: Any) -> Any:
        # ``u[1:-1] += step`` in a loop: host data under the op's floor is written by NumPy directly.
        kind = type(other)
        if kind is ndarray:
            odata = other._engine_array
        elif kind is _ND or kind in _PY_SCALARS:
            odata = other
        elif not _handled(other):  # NumPy's rule: defer to a higher priority, else the ufunc asks its override
            if ufunc is None or not hasattr(kind, "__array_ufunc__"):
                return NotImplemented
            return ufunc(self, other, out=(self,))
        else:
            odata = None
        data = self._engine_array
        if odata is not None and STATE.plain and type(data) is _ND:
            okind = type(odata)
            if okind is _ND or okind in _PY_SCALARS:
                n = odata.size if okind is _ND and odata.size > data.size else data.size
                if n <= op.floor or host_shortcut(op, n):
                    if blas:
                        blas_spin.ran()
                    mirrors.wrote(data)  # (mirrors)
                    func(data, odata, out=data)
                    return self
        del data  # (an array only its wrapper holds may move to the device that computes into it)
        return _call.call(op, (self, other), {"out": (self,)})

    if ufunc_name in ("equal", "not_equal"):
        routed = forward

        def forward(self: ndarray, other: Any) -> Any:  # routed's, with NumPy's answer where no loop compares
            try:
                return routed(self, other)
            except _NO_LOOP:  # NumPy's == and != of what no loop compares: all False (True), a bool for 0-d
                return wrap(compare(self.__array__(), _host_value(other)))

    return op, forward, reflected, inplace


_NO_LOOP = np._core._exceptions._UFuncNoLoopError


def _told_apart(seen: dict[str, tuple[int, int, int]], case: str, at: int) -> int | None:
    """A temporary's count in ``case`` (``seen``'s entry ``at``), where it is less than a named
    operand's and the left operand's were told apart; else ``None``."""
    named, temporary = seen.get(f"named {case}"), seen.get(f"temporary {case}")
    if _temporary_refs is None or named is None or temporary is None or temporary[at] >= named[at]:
        return None
    return temporary[at]


def _measure_temporaries() -> None:
    """The reference count ``forward`` sees on a temporary left operand, and on a temporary right
    one, and ``unary`` on its operand, each where it differs from a named one's (Python versions
    differ; where they do not, or a compiled path built from an older source never handed the
    call over, nothing is elided there); and the count the compiled path sees on the left, which
    it is told (``_compiled.set_temporary_refs``)."""
    global _temporary_refs, _temporary_right_refs, _temporary_unary_refs
    seen: dict[str, tuple[int, int, int]] = {}
    case = ["named"]

    def record(self: ndarray, other: Any = None) -> Any:
        # the counts on each side, and where the compiled path handed the left over
        seen[case[0]] = (_rc(self), _compiled.refs_seen(), _rc(other))
        return NotImplemented

    forward, negative = ndarray.__add__, ndarray.__neg__
    large = _ELIDE_BYTES // 8  # elements: the compiled path hands arrays this large to the Python one
    try:
        ndarray.__add__ = fast("forward", op_named("add"), record)  # forward's frame, called as it is
        ndarray.__neg__ = fast("method", op_named("negative"), record)  # and a unary operator's
        _compiled.also_elides(ndarray.__neg__)
        named, named_too = wrap_host(np.zeros(large)), wrap_host(np.zeros(large))
        cases = {"named": lambda: named + 1.0, "temporary": lambda: wrap_host(np.zeros(large)) + 1.0,
                 "named right": lambda: named + named_too,
                 "temporary right": lambda: named + wrap_host(np.zeros(large)),
                 "named alone": lambda: -named, "temporary alone": lambda: -wrap_host(np.zeros(large))}
        for _ in (0, 1):
            for case[0], run in cases.items():
                try:
                    run()
                except TypeError:
                    pass
    finally:
        ndarray.__add__, ndarray.__neg__ = forward, negative
    (named_refs, named_compiled, _), (temporary_refs, temporary_compiled, _) = seen["named"], seen["temporary"]
    _temporary_refs = temporary_refs if temporary_refs < named_refs else None
    _temporary_right_refs = _told_apart(seen, "right", 2)
    _temporary_unary_refs = _told_apart(seen, "alone", 0)
    # the compiled path keeps a named operand's operator, which never elides, rather than hand it over
    told = _temporary_refs is not None and 0 <= temporary_compiled < named_compiled
    _compiled.set_temporary_refs(temporary_compiled if told else -1)

    global _owned_refs

    def outer(self: ndarray) -> int:
        data = self._engine_array
        return inner(data)

    def inner(data: np.ndarray) -> int:  # the frames of forward and _elides
        return _rc(data)

    _owned_refs = outer(wrap_host(np.zeros(1)))

    global _alone_refs

    def moves(self: ndarray) -> int:  # the frame of _moves
        data = self._engine_array
        return _rc(data)

    _alone_refs = moves(wrap_host(np.zeros(1)))


# The unary operators NumPy computes into a temporary operand (number.c's ``can_elide_temp_unary``).
_OWN_TEMPORARY = frozenset({"negative", "positive", "absolute", "invert"})


def _unary(op: Any) -> Any:
    elides = op.name in _OWN_TEMPORARY

    def unary(self: ndarray) -> Any:
        data = self._engine_array
        if (elides and type(data) is _ND and data.nbytes >= _ELIDE_BYTES and _rc(self) == _temporary_unary_refs
                and _elides(op.ufunc, data)):  # ``-(a * b)``: into the temporary, as NumPy's
            if STATE.plain and (data.size <= op.floor or host_shortcut(op, data.size)):
                op.func(data, out=data)
                return self
            return _call.call(op, (self,), {}, into=self)
        return _call.call(op, (self,), {})

    return unary


def _inplace_matmul(self: ndarray, other: Any) -> Any:
    """``a @= b`` as NumPy's: matmul into ``a`` with its core axes fixed, so that a result of
    another shape than ``a``'s is a ValueError, not broadcast into it."""
    axes = [(-1,), (-2, -1), (-1,)] if self.ndim == 1 else [(-2, -1), (-2, -1), (-2, -1)]
    if not _handled(other):  # as the other in-place operators: NumPy's ufunc asks an operand's override
        return np.matmul(self, other, out=(self,), axes=axes) if hasattr(type(other), "__array_ufunc__") \
            else NotImplemented
    try:
        return _call.call(op_named("matmul"), (self, other), {"out": (self,), "axes": axes})
    except np.exceptions.AxisError:
        raise ValueError("inplace matrix multiplication requires the first operand to have at least one and "
                         "the second at least two dimensions.") from None


def _install_operators() -> None:
    for short, name in _BINARY.items():
        op, forward, reflected, inplace = _binary(name, mirrored=f"__r{short}__")
        # ``x ** y`` compiled is NumPy's operator itself (what _power_operator computes for it)
        compiled = fast("forward", op, forward, operator.pow if short == "pow" else None)
        if name in _COMMUTES:
            _compiled.also_elides(compiled)
        setattr(ndarray, f"__{short}__", compiled)
        setattr(ndarray, f"__r{short}__", fast("reflected", op, reflected))
        if short == "matmul":  # NumPy's own rule for ``a @= b`` (below), not matmul into a
            ndarray.__imatmul__ = _inplace_matmul
        elif short != "divmod":
            setattr(ndarray, f"__i{short}__", fast("inplace", op, inplace))
    for short, name in _COMPARE.items():
        compare = getattr(operator, short)
        op, forward = _binary(name, compare, f"__{_MIRRORED.get(short, short)}__")[:2]
        setattr(ndarray, f"__{short}__", fast("forward", op, forward, compare))
    for short, name in _UNARY.items():
        op = op_named(name)
        compiled = fast("method", op, _unary(op))
        if name in _OWN_TEMPORARY:
            _compiled.also_elides(compiled)
        setattr(ndarray, f"__{short}__", compiled)
    ndarray.__array__ = fast("array", None, ndarray.__array__)  # numpy.asarray(a) of host data: the data
    ndarray.__getitem__ = fast("getitem", None, ndarray.__getitem__)
    ndarray.__setitem__ = fast("setitem", None, ndarray.__setitem__)
    # views and casts of host data are NumPy's at any size: the compiled path runs NumPy's method
    ndarray.T = property(fast("view", None, ndarray.T.fget, np.ndarray.transpose))
    for name in ("transpose", "reshape", "astype"):
        setattr(ndarray, name, fast("view", None, getattr(ndarray, name), getattr(np.ndarray, name)))
    # NumPy's own functions given dispatch arrays (third-party code), once the Python methods
    # have met each function and entered its op in the table
    ndarray.__array_function__ = fast("array_function", None, ndarray.__array_function__, _PROTOCOL_OPS)
    ndarray.__array_ufunc__ = fast("array_ufunc", None, ndarray.__array_ufunc__, _PROTOCOL_OPS)


# Methods that are the NumPy function of the same meaning with the array first.
_METHODS = {
    "all": "all", "any": "any", "argmax": "argmax", "argmin": "argmin", "argpartition": "argpartition",
    "argsort": "argsort", "clip": "clip", "conj": "conjugate", "conjugate": "conjugate",
    "cumprod": "cumprod", "cumsum": "cumsum", "diagonal": "diagonal", "dot": "dot", "max": "max",
    "mean": "mean", "min": "min", "nonzero": "nonzero", "prod": "prod", "repeat": "repeat",
    "round": "round", "searchsorted": "searchsorted", "std": "std", "sum": "sum", "take": "take",
    "trace": "trace", "var": "var",
}


def _method(method: str, op: Any, numpy_method: Any) -> Any:
    def bound(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        if args and len(args) > _out_parameters(numpy_method)[0]:  # ``a.clip(0, 1, b)``: out by keyword,
            args, kwargs = _out_by_keyword(numpy_method, args, kwargs)  # so that it is what comes back
        data = self._engine_array
        if args and mirrors.counted():  # (mirrors) an ``out`` given by position: ``a.clip(0, 1, b)``
            _call._writes(op, (self, *args), kwargs)
        if (type(data) is np.ndarray and STATE.plain and kwargs.get("out") is None
                and not (kwargs and any(isinstance(v, Wrapper) for v in kwargs.values()))):
            # NumPy's method, cheaper than the function, where ``_call.call`` would run NumPy
            # (``_call.call`` unwraps dispatch arrays given by keyword: ``a.std(where=mask)``)
            if not args and data.size <= op.floor:  # the common case, without the general rule's cost
                return wrap(numpy_method(data, **kwargs))
            hargs = _call.under_floors(op, (self, *args))[0]
            if hargs is not None:
                if op.blas:  # ``a.dot(b)``
                    blas_spin.ran()
                return wrap(numpy_method(*hargs, **kwargs))
        return _call.call(op, (self, *args), kwargs)

    bound.__name__ = method
    bound.__qualname__ = f"ndarray.{method}"
    bound.__doc__ = f"See ``dispatch.{op.name}``."
    return bound


_OUT_PARAMETERS: dict[Any, tuple[int, tuple[str, ...]]] = {}


def _out_parameters(numpy_method: Any) -> tuple[int, tuple[str, ...]]:
    """Where NumPy's method takes ``out`` by position (after ``self``; large where it takes none),
    and the names of the positions after it (read once, where a call first gives one)."""
    found = _OUT_PARAMETERS.get(numpy_method)
    if found is None:
        names = _positional_names(numpy_method)[1:]  # after self
        at = names.index("out") if "out" in names else sys.maxsize
        found = _OUT_PARAMETERS[numpy_method] = (at, tuple(names[at + 1:]))
    return found


def _positional_names(numpy_method: Any) -> list[str]:
    """The names of a NumPy method's parameters that may be given by position, self first. Read
    from its text signature by Python's parser: ``inspect.signature`` reads a builtin's with the
    tokenizer, whose patterns take longer to compile than a short script's routing."""
    text = getattr(numpy_method, "__text_signature__", None)
    if text:
        import ast  # (only once a method is given arguments by position; NumPy has loaded it)

        spec = ast.parse(f"def f{text.replace('$', '')}: pass").body[0].args
        return [a.arg for a in (*spec.posonlyargs, *spec.args)]
    import inspect

    return [p.name for p in inspect.signature(numpy_method).parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]


def _out_by_keyword(numpy_method: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A method's arguments with ``out`` and those after it given by keyword, where NumPy's
    signature names them all (else as they were: NumPy's method reads them)."""
    at, after = _out_parameters(numpy_method)
    if args[at] is None or len(args) > at + 1 + len(after) or not kwargs.keys().isdisjoint(("out", *after)):
        return args, kwargs  # no out; or positions past those named (``a.sum(0, None, o, True)``), or twice
    return args[:at], {**kwargs, **dict(zip(("out", *after), args[at:], strict=False))}


def _install_methods() -> None:
    for method, name in _METHODS.items():
        op, numpy_method = op_named(name), getattr(np.ndarray, method)
        setattr(ndarray, method, fast("method", op, _method(method, op, numpy_method), numpy_method))
    ndarray.copy = fast("copy", op_named("copy"), ndarray.copy, np.ndarray.copy)

    def compress(self: ndarray, condition: Any, axis: Any = None, out: Any = None) -> Any:
        return _call.call(op_named("compress"), (condition, self, axis), {} if out is None else {"out": out})

    def choose(self: ndarray, *choices: Any, out: Any = None, mode: str = "raise") -> Any:
        # NumPy's: one argument is the sequence of choices, several are the choices themselves
        if not choices:
            raise TypeError("choose() takes exactly 1 argument (0 given)")
        choices = choices[0] if len(choices) == 1 else choices
        return _call.call(op_named("choose"), (self, choices), {"mode": mode, **({} if out is None else {"out": out})})

    ndarray.compress = compress
    ndarray.choose = choose

    for method in ("conj", "conjugate"):
        setattr(ndarray, method, _own_conjugate(method, getattr(ndarray, method)))


def _own_conjugate(method: str, routed: Any) -> Any:
    """``a.conj()``: NumPy's method gives a real array itself, a complex one's conjugate."""
    def conjugate(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and self.dtype.kind in "biuf":
            return self
        if len(args) == 1 and not kwargs:  # ``a.conj(out)``: the ufunc's out, which comes back itself
            args, kwargs = (), {"out": args[0]}
        return routed(self, *args, **kwargs)

    conjugate.__name__, conjugate.__qualname__ = method, f"ndarray.{method}"
    return conjugate


def _refs_of_one_name() -> int:
    """What ``sys.getrefcount(self)`` reads inside a method of an object one name holds."""

    class Probe:
        def count(self) -> int:
            return sys.getrefcount(self)

    held = Probe()
    return held.count()


_ONE_NAME = _refs_of_one_name()
_compiled.setup(ndarray, STATE, wrap, _ELIDE_BYTES, Op, vars(blas_spin))
_install_operators()
_measure_temporaries()
_compiled.install_slots()
_compiled.install_buffer(ndarray)
_compiled.install_buffer(_DeviceScalar)  # (its slots were copied from ndarray's before)
_install_methods()
_compiled.installed_in(ndarray)


def _read_only_as_numpys() -> None:
    """Setting a read-only attribute (``a.device = ...``) raises NumPy's message, not Python's
    "property has no setter": code and tests match on it."""
    for name, prop in list(vars(ndarray).items()):
        if isinstance(prop, property) and prop.fset is None and isinstance(getattr(np.ndarray, name, None),
                                                                           types.GetSetDescriptorType):
            def refuse(self: Any, value: Any, name: str = name) -> None:
                raise AttributeError(f"attribute '{name}' of '{builtins.type(self).__name__}' objects is not writable")

            setattr(ndarray, name, property(prop.fget, refuse, prop.fdel, prop.__doc__))


_read_only_as_numpys()
for _name in ("shape", "dtype", "ndim", "size"):
    setattr(ndarray, _name, _compiled.attr(_name, vars(ndarray)[_name]))
del _name
ndarray.__module__ = "dispatch"
_call.bind(ndarray, _DeviceScalar, wrap, held)


def _numpys_signatures() -> None:
    """Each method shows NumPy's signature to ``inspect.signature`` (help(), IDEs, NumPy's own
    checks that ``ndarray`` and its scalars agree), not the wrapper's ``*args, **kwargs``: the
    innermost wrapper's ``__wrapped__`` is NumPy's method, which ``inspect`` reads when asked
    (parsing 130 signatures here cost a script's first call 30-50 ms)."""
    for name, theirs in vars(np.ndarray).items():
        ours = vars(ndarray).get(name)
        if ours is None or not callable(ours) or isinstance(ours, (property, type)):
            continue
        if getattr(theirs, "__text_signature__", None) is None and not isinstance(theirs, types.FunctionType):
            continue  # NumPy gives none: the wrapper's own stays
        inner = getattr(ours, "__wrapped__", None)
        while inner is not None and inner is not theirs and getattr(inner, "__module__", "").startswith("dispatch"):
            ours, inner = inner, getattr(inner, "__wrapped__", None)  # through the compiled path to its fallback
        try:
            ours.__wrapped__ = theirs
        except (AttributeError, TypeError):  # none can be set
            pass


_numpys_signatures()
box.register(ndarray, device_scalar)

_COPY = op_named("copy")
