"""The call path of one op: find the arrays, decide the target, run, wrap the result.

::

    dispatch.<fn> / operator / numpy.<fn>(dispatch array)
      -> call(op, args, kwargs)
      -> router.decide(op, inputs)            which target, and why
      -> target.run(op, native args)          Unsupported or a failure: NumPy on the host
      -> wrap(result)                         dispatch.ndarray on the target's device

Anything a target refuses or fails at runs on NumPy on the host, with the reason recorded in
the trace (``dispatch.tracing``), so every call returns NumPy's result.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from dispatch import targets
from dispatch.arrays import _compiled, mirrors
from dispatch.arrays.array_likes import for_numpy
from dispatch.base import blas_spin, settings
from dispatch.base.box import Wrapper
from dispatch.base.devices import HOST, HOST_ONLY, Device, device_of, library_of
from dispatch.base.ops import FFT_1D, GETITEM, Op
from dispatch.base.state import STATE
from dispatch.routing import floors
from dispatch.targets import Target, Unsupported
from dispatch.targets.numpy_target import NUMPY

__all__ = ["Inputs", "call", "failure", "host_shortcut", "routing"]

_SCALARS = (int, float, complex, bool, np.generic)

# The array type, its 0-d device results' type and the wrapper of results: defined above this
# module (``dispatch.arrays._array``), which hands them over as it loads, as it tells the
# compiled path (``_compiled.setup``).
ndarray: type = type(None)
_DeviceScalar: type = type(None)
wrap: Callable[..., Any] = None  # type: ignore[assignment]
held: Callable[[Any], Any] = None  # type: ignore[assignment]  # ``_array.held``: an array around data as it is
_engine_of = targets.engine_of

# The routing machinery, loaded by ``routing()`` at the first call over the floors (``host_shortcut``):
# a script whose calls all stay under them never loads it (``dispatch.routing.floors``).
router: Any = None  # ``dispatch.routing.router``
ROUTER: Any = None  # its ``Router``
_LIVE: Any = SimpleNamespace(recording=False)  # the region being recorded for the planner (``dispatch.routing.live``)
regions: Any = None
_staging: Any = None
Decision: Any = None
DecisionKind: Any = None
is_forced: Any = None
SETTLED_EVERY = 0


def bind(array_type: type, scalar_type: type, wrap_result: Callable[..., Any], hold: Callable[[Any], Any]) -> None:
    """Called once by ``dispatch.arrays._array`` as it loads, once it has set up the compiled path."""
    global ndarray, _DeviceScalar, wrap, held
    ndarray, _DeviceScalar, wrap, held = array_type, scalar_type, wrap_result, hold


def routing() -> Any:
    """The router's module, with the routing machinery loaded and the call path bound to it (once)."""
    global router, ROUTER, _LIVE, regions, _staging, Decision, DecisionKind, is_forced, SETTLED_EVERY
    if ROUTER is not None:
        return router
    from dispatch.routing import cost, decisions, regions, router
    from dispatch.targets import _staging

    Decision, DecisionKind, is_forced = decisions.Decision, decisions.DecisionKind, decisions.is_forced
    SETTLED_EVERY, _LIVE = router.SETTLED_EVERY, router.ROUTER.live
    cost.set_mirrors(mirrors.valid, mirrors.keepable)  # a copy a device keeps is free to read there
    # The compiled path serves the memo's host entries as ``_memo_run`` does (dispatch/arrays/_fastpath.c),
    # told here what it reads: the router (its memo and epoch), the decisions' type and how often a
    # settled one is timed, the end of an elided operator's key, and the padding that unsizes a transform.
    _compiled.bind_router(router.ROUTER, Decision, SETTLED_EVERY, _INTO, FFT_PADDED)
    ROUTER = router.ROUTER  # last: the machinery is bound
    return router


def _tracing() -> Any:
    """``dispatch.tracing``, loaded by the first fallback or open trace: a script whose calls all
    run where routed never needs it."""
    from dispatch import tracing

    return tracing


if settings.ENV.trace:  # DISPATCH_TRACE: the process's trace (``dispatch.tracing``) opens with the array machinery
    _tracing()

_NOWHERE: frozenset = frozenset()


class Inputs:
    """The arrays among a call's arguments, summarised for the router."""

    __slots__ = ("arrays", "devices", "dtypes", "layout", "nbytes", "size")

    def __init__(self, arrays: list[Any], layout: Any = None) -> None:
        self.arrays = arrays
        self.layout = layout  # what else tells calls of one size apart (a reduction's axis)
        size = nbytes = 0
        dtypes = []
        host = False
        devices = None  # the devices other than the host, once one is met
        for a in arrays:
            data = a._engine_array if isinstance(a, Wrapper) else a
            if type(data) is np.ndarray:  # the common case: no device to look up
                n, dtype = data.size, data.dtype
                host = True
            else:
                if library_of(type(data)) == "cupy":  # a loop on the device: read directly, as CuPy keeps them
                    n, dtype, device = data.size, data.dtype, device_of(data)
                else:
                    n, dtype, device = _size(data), _dtype(a), _device(a)
                if devices is None:
                    devices = {device}
                else:
                    devices.add(device)
            if n > size:
                size = n
            nbytes += n * dtype.itemsize
            dtypes.append(dtype)
        self.size = size
        self.nbytes = nbytes
        self.dtypes = tuple(dtypes)
        if devices is None:
            self.devices = HOST_ONLY if host else _NOWHERE
        else:
            if host:
                devices.add(HOST)
            self.devices = frozenset(devices)

    @property
    def resident(self) -> Device | None:
        """The one non-host device holding inputs, if any."""
        for d in self.devices:
            if not d.is_host:
                return d
        return None


def _layout(op: Op, args: tuple, kwargs: dict) -> Any:
    """What else tells apart calls of one op, dtypes and size that cost differently: the part
    of the router's key that ``_LAYOUTS`` gives for the op's kind of work, else ``None``."""
    of = _LAYOUTS.get(op.work)
    return None if of is None else of(op, args, kwargs)


def _axis(op: Op, args: tuple, kwargs: dict) -> Any:
    axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
    ndim = getattr(args[0], "ndim", 0) if args else 0
    if type(axis) is int:
        return (ndim, axis % ndim if ndim else axis)
    if axis is None or (type(axis) is tuple and all(type(a) is int for a in axis)):
        return (ndim, axis)
    return None  # not an axis (a percentile's q): one key for all


def _product(op: Op, args: tuple, kwargs: dict) -> Any:
    """``("product", b)``, ``b`` the bit length of a two-operand product's output size.

    Products of one input size differ by orders of magnitude in work and output: the
    distances of 1000 queries to 50000 points (1000 x 32 by 32 x 50000) make 50 million
    elements, a Gram matrix of as large an operand (32 x 50000 by 50000 x 32) a thousand. Under
    one key, what the router learned of one decided the other (a GPU machine kept the first on
    the host, as learned from the second)."""
    if op.name not in _OUTPUT_ELEMENTS or len(args) < 2:
        return None
    a, b = getattr(args[0], "shape", None), getattr(args[1], "shape", None)
    if a is None or b is None or not a or not b:
        return None
    return ("product", _OUTPUT_ELEMENTS[op.name](tuple(a), tuple(b)).bit_length())


def _matmul_output(a: tuple, b: tuple) -> int:
    m = a[-2] if len(a) >= 2 else 1
    n = b[-1] if len(b) >= 2 else 1
    return max(math.prod(a[:-2]), math.prod(b[:-2]), 1) * m * n


# The output size of a product of two arrays of these shapes, by op.
_OUTPUT_ELEMENTS = {
    "matmul": _matmul_output,
    "linalg.matmul": _matmul_output,
    "matvec": lambda a, b: max(math.prod(a[:-2]), math.prod(b[:-1]), 1) * (a[-2] if len(a) >= 2 else 1),
    "dot": lambda a, b: math.prod(a[:-1]) * math.prod(b[:-2]) * (b[-1] if len(b) >= 2 else 1),
    "inner": lambda a, b: math.prod(a[:-1]) * math.prod(b[:-1]),
}


def _broadcast(op: Op, args: tuple, kwargs: dict) -> Any:
    """``"broadcast"`` where an element-wise call's array operands differ in shape.

    Of one size, ``W1 - step`` (two 256 x 512 weights) and ``logits - logits.max(axis=1,
    keepdims=True)`` (16384 x 10 less its row maxima) are other calls of a program, and under
    one key what the router learned of one would decide the other."""
    first = None
    for a in args:
        shape = a._engine_array.shape if type(a) is ndarray else getattr(a, "shape", None)
        if not shape:  # a scalar, or a 0-d array: broadcasts everywhere
            continue
        if first is None:
            first = shape
        elif shape != first:
            return "broadcast"
    return None


# The layout of a call, by the op's kind of work: reductions and scans of one size cost
# differently along different axes (a full max, against one over rows of ten), products by
# their output, element-wise calls by whether their operands broadcast.
_LAYOUTS = {"reduce": _axis, "scan": _axis, "matmul": _product, "map": _broadcast}


# A transform padded to at least this many times its input's length is priced on its points.
FFT_PADDED = 4


def _fft_points(inputs: Inputs, args: tuple, kwargs: dict) -> None:
    """A 1-D transform given ``n`` runs on ``n`` points, not on its input's length (``rfft(taps,
    n=2**20)`` of 255 taps is a transform of 2**20 points: 20 ms on NumPy, not a small call):
    where ``n`` pads the input ``FFT_PADDED`` times or more, its length becomes the call's
    layout, and its size counts the points transformed. A signal padded to the next power of
    two (at most twice its length) keeps its own size and key, as before: the router's floors
    and what it learned were measured on such calls."""
    if not inputs.arrays:
        return
    padded = _fft_padded(inputs.arrays[0], args, kwargs)
    if padded is not None:
        n, length = padded
        inputs.layout = n
        inputs.size = inputs.size // length * n


def _fft_padded(a: Any, args: tuple, kwargs: dict) -> tuple[int, int] | None:
    """``(n, length)`` where a 1-D transform of ``a`` pads its length along the axis to ``n``
    points, ``FFT_PADDED`` times or more; else ``None``."""
    n = kwargs.get("n", args[1] if len(args) > 1 else None)
    axis = kwargs.get("axis", args[2] if len(args) > 2 else -1)
    shape = getattr(a, "shape", None)
    if type(n) is not int or type(axis) is not int or shape is None or not -len(shape) <= axis < len(shape):
        return None  # (NumPy raises for an axis out of range)
    length = shape[axis]
    if type(length) is not int:
        return None  # a Dask array's unknown (NaN) length
    return (n, max(length, 1)) if n >= FFT_PADDED * length else None


def fft_sized(args: tuple, kwargs: dict) -> bool:
    """Whether a 1-D transform's work follows its input's size (``call``'s ``sized``)."""
    return not args or _fft_padded(args[0], args, kwargs) is None


def _is_array(x: Any) -> bool:
    if isinstance(x, (Wrapper, np.ndarray)):
        return True
    module = type(x).__module__
    return module.startswith(("cupy", "dask.array")) or (module.startswith("torch") and hasattr(x, "dtype"))


def _collect(args: tuple, kwargs: dict) -> list[Any]:
    """Arrays among the arguments, and inside (nested) lists and tuples."""
    found: list[Any] = []
    for value in (*args, *kwargs.values()) if kwargs else args:
        kind = type(value)
        if kind is ndarray or kind is np.ndarray:
            found.append(value)
        elif kind in _PLAIN:  # an axis, a flag: nothing to look into
            continue
        elif _is_array(value):
            found.append(value)
        elif kind is list or kind is tuple:
            _collect_in(value, found)
    return found


def _subclassed(arrays: list[Any]) -> bool:
    """Whether any of a call's arrays is of a subclass of ``numpy.ndarray`` (``numpy.ma``'s
    masked arrays, ``numpy.matrix``, a user's subclass): NumPy's functions keep its mask, its
    type and its rules, which no target's computation on the bare data would."""
    for a in arrays:
        kind = type(a)
        if kind is not ndarray and kind is not np.ndarray and isinstance(a, np.ndarray):
            return True
    return False


def _collect_in(values: Any, found: list[Any]) -> None:
    for v in values:
        if _is_array(v):
            found.append(v)
        elif type(v) in (list, tuple):  # np.block takes nested lists
            _collect_in(v, found)


def _size(x: Any) -> int:
    data = x._engine_array if isinstance(x, Wrapper) else x
    size = data.size
    return data.numel() if callable(size) else size  # torch: .size() is the shape, .numel() the count


def _itemsize(x: Any) -> int:
    return _dtype(x).itemsize


def _dtype(x: Any) -> np.dtype:
    return x.dtype if isinstance(x, (Wrapper, np.ndarray)) else ndarray._from_native(x).dtype


def _device(x: Any) -> Device:
    return x.device if isinstance(x, Wrapper) else device_of(x)


# ---- running on a target --------------------------------------------------------------------


def _convert(value: Any, to: Any) -> Any:
    if _is_array(value):
        return to(value)
    if type(value) in (list, tuple) and _holds_array(value):
        return type(value)(_convert(v, to) for v in value)
    return for_numpy(value)


def _holds_array(values: Any) -> bool:
    return any(_is_array(v) or (type(v) in (list, tuple) and _holds_array(v)) for v in values)


def to_host(x: Any) -> Any:
    """A dispatch or native array as host NumPy, to read (a transfer if it lives on a device,
    unless a host copy of it is kept: ``mirrors.read``, read-only)."""
    if isinstance(x, Wrapper):
        data = x._engine_array
        if type(data) is np.ndarray:
            return data
        return mirrors.read(data)  # (mirrors) dispatch's own device memory
    if type(x) is np.ndarray:
        return x
    return NUMPY.from_native(x)


def _to_host_once(copies: dict) -> Any:
    """``to_host`` that copies each device array once per call: an array passed twice stays
    one array on the host (``shares_memory(a, a)``, ``copyto(a, a)``)."""

    def convert(x: Any) -> Any:
        key = id(x)
        if key not in copies:
            copies[key] = (x, to_host(x))  # x kept alive so that its id is not reused
        return copies[key][1]

    return convert


def host_args(args: tuple, copies: dict | None = None) -> tuple:
    """Arguments with every array brought to the host as NumPy."""
    convert = _to_host_once({} if copies is None else copies)
    return tuple(_convert(a, convert) for a in args)


def host_kwargs(kwargs: dict, copies: dict | None = None) -> dict:
    convert = _to_host_once({} if copies is None else copies)
    return {k: _convert(v, convert) for k, v in kwargs.items()}


def forced_target(what: str | None = None) -> Target | None:
    """The target forced here, or ``None``: while routing, or where the forced target is unavailable
    (``DISPATCH_BACKEND`` names one this machine lacks). ``what`` (an op's name), where given, then
    ran on NumPy, recorded as a fallback, as the router's forced rule records its calls'."""
    name = STATE.forced_name()
    if name is None or name == "auto":
        return None
    target = targets.probe(name)
    if target is None and what is not None:
        _tracing().fallback(what, targets.forced_but_unavailable(name))
    return target


def to_forced_device(result: Any, what: str | None = None) -> Any:
    """Random draws happen on the host (NumPy's streams); a forced device target gets them
    (``what``: the draw's name, recorded as a fallback where that target is unavailable; a routed
    draw's decision recorded it already)."""
    target = forced_target(what) if not STATE.plain else None
    if target is None or target.device.is_host or not isinstance(result, Wrapper):
        return result
    try:
        return result.to(target.name)
    except Unsupported:  # a dtype the device cannot hold (strings drawn by choice): it stays on the host
        return result


def _native_for(target: Target, handed: list | None = None):
    """Arrays as ``target``'s own. One call sends a host array to a device once: passed twice (``x * x``), or with its
    transpose (``A.T @ A``), the later one is the copy already made, or its transpose.
    ``handed``: where given, host arrays already copied there and not written since are read
    from that copy (``mirrors``), and copies made are kept; the copies served are listed in it."""
    copies: list[tuple[np.ndarray, Any]] = []  # (host array, its copy on the device) made by this call

    def from_host(data: np.ndarray) -> Any:
        if target.device.is_host:
            return target.from_host(data)
        for host, copy in copies:
            if data is host:
                return copy
            if _transposed(data, host):
                return copy.T
        copy = mirrors.lookup(data, target) if handed is not None else None  # (mirrors)
        served = copy
        if copy is None and handed is not None and data.base is not None:
            sliced = mirrors.through_owner(data, target)  # (mirrors) a slice of its memory's copy
            if sliced is not None:
                copy, served = sliced
        if copy is None:
            copy = served = target.from_host(data)
            if handed is not None:
                mirrors.keep(data, target, copy)
        if handed is not None:
            handed.append(served)
        copies.append((data, copy))
        return copy

    def convert(x: Any) -> Any:
        if isinstance(x, Wrapper):
            data = x._engine_array
        else:
            data = x
            mirrors.escape(data)  # (mirrors) the caller's own array, which it may write unseen
        if target.owns(data):
            return data
        if isinstance(data, np.ndarray):
            return from_host(data)
        if device_of(data) == target.device:
            return target.adopt(data)
        return target.from_host(NUMPY.from_native(data))

    return convert


def _transposed(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` is ``b.T``: two 2-D arrays on the same memory, shape and strides reversed."""
    return (a.ndim == 2 and b.ndim == 2 and a.shape == b.shape[::-1] and a.strides == b.strides[::-1]
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def _split_out(op: Op, kwargs: dict) -> tuple[dict, Any]:
    """Take ``out=`` from the call: it is written at the end, only once the result is right."""
    out = kwargs.get("out")
    if out is None:
        return kwargs, None
    if isinstance(out, tuple):
        if len(out) != 1:
            return kwargs, None  # several outputs (divmod, modf): NumPy handles them
        out = out[0]
    if not isinstance(out, Wrapper):
        return kwargs, None
    rest = dict(kwargs)
    del rest["out"]
    return rest, out


def _run_into(op: Op, args: tuple, into: ndarray) -> ndarray:
    op.func(*[a._engine_array if type(a) is ndarray else a for a in args], out=into._engine_array)
    return into


def _run_numpy(op: Op, args: tuple, kwargs: dict) -> Any:
    """Run on NumPy: arrays come to the host; writes into device arrays are copied back."""
    if op.blas:
        blas_spin.ran()
    if op.mutates is None and op.work != "random":
        hargs = _small_on_host(args, _ANY_SIZE)  # every array already on the host: unwrap, nothing to copy
        hkwargs = _small_kwargs(kwargs, _ANY_SIZE) if hargs is not None else None
        if hkwargs is not None:
            return wrap(op.func(*hargs, **hkwargs), out_of=(args, kwargs))
    copies: dict = {}
    written = _device_outputs(op, args)
    for w in written:  # (mirrors) each gets a host copy of its own to write, never a kept (read-only) one
        copies[id(w)] = (w, mirrors.handed(w._engine_array))
    hargs, hkwargs = host_args(args, copies), host_kwargs(kwargs, copies)
    if op.mutates is not None and len(args) > op.mutates:
        target = args[op.mutates]
        if isinstance(target, Wrapper) and not target.device.is_host:
            try:
                result = op.func(*hargs, **hkwargs)
            except Exception:
                target._assign(hargs[op.mutates])  # NumPy keeps what it wrote before it raised (put, ufunc.at)
                raise
            target._assign(hargs[op.mutates])  # the host copy got the writes
            return result
    out, device_out = kwargs.get("out"), None
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if isinstance(out, Wrapper) and not out.device.is_host:
        device_out = out
        hkwargs["out"] = np.empty(out.shape, out.dtype)  # NumPy checks casting into it
    result = op.func(*hargs, **hkwargs)
    for w in written:  # outputs passed by position: what NumPy wrote goes to the device
        w._assign(copies[id(w)][1])
    if device_out is not None:
        device_out._assign(hkwargs["out"])
        return device_out
    if copies:
        result = mirrors.claimed(result)  # (mirrors) a view of a kept host copy is the result's now
    if op.work == "random":
        drawn = wrap(result, out_of=(args, kwargs))
        return drawn if drawn is out else to_forced_device(drawn)  # out= comes back itself, as NumPy's
    for original, copy in copies.values():
        if copy is result and isinstance(original, Wrapper):
            return original  # NumPy handed an argument back as it is: that array, on its device
    return wrap(result, out_of=(args, kwargs))


def _run_on(target: Target, op: Op, args: tuple, kwargs: dict) -> Any:
    if op.mutates is not None:
        written = args[op.mutates] if len(args) > op.mutates else None
        if not (isinstance(written, Wrapper) and written.device == target.device):
            raise Unsupported("it writes into an array that lives on another device")
    handed: list | None = [] if op.mutates is None else None  # (mirrors) none for a call that writes its input
    convert = _native_for(target, handed)
    kwargs, out = _split_out(op, kwargs)
    native_args = tuple(_convert(a, convert) for a in args)
    native_kwargs = {k: _convert(v, convert) for k, v in kwargs.items()}
    del convert  # (and the host arrays it copied: ``out`` may move to the device, below)
    result = target.run(op, native_args, native_kwargs)
    if handed:
        mirrors.released(result, handed)  # (mirrors) a copy handed back as the result is the program's now
    if op.mutates is not None:
        return result
    if out is not None:
        _check_out(op, result, out)
        native = result if not isinstance(result, Wrapper) else result._engine_array
        fresh = target.owns(native) and not any(native is a for a in native_args)
        if not (fresh and _dtype(native) == out.dtype and out._moves(target, replaced=native)):
            out._assign(native)  # else the result is the array's data: it moved to the device
        return out
    for a, native in zip(args, native_args, strict=True):
        if native is result and isinstance(a, Wrapper):
            return a  # the target handed an argument back as it is (a view op with nothing to do)
    return wrap(result)


def _check_out(op: Op, result: Any, out: ndarray) -> None:
    """Refuse (before anything is written) a result that NumPy would not write into ``out``:
    another shape (a copy would broadcast it), or a cast NumPy's rule forbids (ufuncs cast
    same-kind; other functions are left to NumPy unless the dtypes are equal)."""
    native = result._engine_array if isinstance(result, Wrapper) else result
    shape = tuple(getattr(native, "shape", ()))
    if shape != out.shape:
        raise Unsupported(f"a result of shape {shape} into out= of shape {out.shape}: NumPy decides")
    dtype = _dtype(native)
    if dtype == out.dtype:
        return
    if op.ufunc is None or not np.can_cast(dtype, out.dtype, casting="same_kind"):
        raise Unsupported(f"casting {dtype} into out= of {out.dtype}: NumPy decides")


_ANY_SIZE = 1 << 62


_PLAIN = frozenset({int, float, bool, complex, str, type(None)})


def _small_on_host(values: Any, floor: int) -> list | None:
    """``values`` with dispatch arrays unwrapped, if every array among them is a host array
    of at most ``floor`` elements; ``None`` otherwise (the router must decide)."""
    out = []
    for v in values:
        kind = type(v)
        if kind in _PLAIN:  # an axis, a flag, a dtype's name: nothing to look into
            out.append(v)
            continue
        if kind is ndarray:
            v = v._engine_array
            if type(v) is not np.ndarray or v.size > floor:
                return None
        elif kind is np.ndarray:
            if v.size > floor:
                return None
        elif kind is list or kind is tuple:
            inner = _small_on_host(v, floor)
            if inner is None:
                return None
            v = inner if kind is list else tuple(inner)
        elif isinstance(v, Wrapper) or _is_array(v):
            return None
        else:
            v = for_numpy(v)
        out.append(v)
    return out


def _small_kwargs(kwargs: dict, floor: int) -> dict | None:
    """``kwargs`` under ``_small_on_host``'s rule: the dict itself when it holds only axes, flags
    and names (the common case), a copy with its host arrays unwrapped, or ``None``."""
    for v in kwargs.values():
        if type(v) not in _PLAIN:  # an array, a list, an out=: unwrapped and size-checked
            hvalues = _small_on_host(kwargs.values(), floor)
            return None if hvalues is None else dict(zip(kwargs, hvalues, strict=True))
    return kwargs


def host_shortcut(op: Op, n: int) -> bool:
    """The host shortcut: whether a call of ``op`` whose arrays all hold host data, the largest
    of ``n`` elements, runs straight on NumPy without asking the router.

    It does where no target but NumPy is forced and no hook observes calls (``STATE.floored``; the
    compiled path, which records nothing, also wants no trace open: ``STATE.plain``) and ``n`` is
    at most the op's round-trip floor (``router.trip_floor``: no device wins the round trip of
    such data, alone; at least the op's floor, ``router.host_floor``, where no target wins at
    all). Strict mode changes nothing here: NumPy runs these calls. The compiled path (``takes``
    and ``run_op`` in dispatch/arrays/_fastpath.c) implements exactly this, deferring to Python
    where a floor is not computed yet."""
    if STATE.host_only:  # NumPy forced for the process: the router's forced rule, without asking it
        return True
    floor = op.floor
    if floor < 0:
        floor = floors.host_floor(op)
    return n <= floor or n <= op.trip_floor  # (where no trip floor is set yet, it is the floor)


def under_floors(op: Op, args: tuple) -> tuple[list | None, int]:
    """``args`` unwrapped if they run on NumPy without asking the router (``host_shortcut``),
    else ``None``; with the floor that holds (what ``_small_kwargs`` checks the keywords against)."""
    n = _host_extent(args)
    if n is not None and op.ufunc is not None:
        n = _broadcast_extent(args, n)
    if n is None or not host_shortcut(op, n):
        return None, 0
    return _small_on_host(args, _ANY_SIZE), _ANY_SIZE if STATE.host_only else max(op.floor, op.trip_floor)


def broadcast_size(shapes: list[tuple[int, ...]], largest: int) -> int:
    """The elements of arrays of ``shapes`` broadcast together: an element-wise call's work
    (``x[:, None] - y[None, :]`` makes more than either holds); ``largest`` (the most any one
    holds) where they are all one shape, or do not broadcast (NumPy raises its own error)."""
    first = shapes[0]
    if all(s == first for s in shapes):
        return largest
    try:
        return math.prod(np.broadcast_shapes(*shapes))
    except ValueError:
        return largest


def _broadcast_extent(args: tuple, n: int) -> int:
    shapes = [a.shape for a in args if type(a) is ndarray or type(a) is np.ndarray]
    return broadcast_size(shapes, n) if len(shapes) > 1 else n


def _host_extent(values: Any) -> int | None:
    """The largest element count of the arrays among ``values`` (lists and tuples looked into),
    if every array is host data; ``None`` otherwise."""
    n = 0
    for v in values:
        kind = type(v)
        if kind in _PLAIN:
            continue
        if kind is ndarray:
            data = v._engine_array
            if type(data) is not np.ndarray:
                return None
            size = data.size
        elif kind is np.ndarray:
            size = v.size
        elif kind is list or kind is tuple:
            size = _host_extent(v)
            if size is None:
                return None
        elif isinstance(v, Wrapper) or _is_array(v):
            return None
        else:
            continue
        if size > n:
            n = size
    return n


# ---- the resident lane ------------------------------------------------------------------------------
# A loop on data a GPU holds makes many small calls on the engine holding it, which the general
# path would make several times slower than the engine's own. The lane runs them with
# what the general path would do for them and nothing else: no host copies, no out= to check.

_MISS = object()  # the lane does not take this call: the general path does
_LANE_LIBRARIES = targets.registry.gpu_libraries()  # CuPy, torch: the libraries of the GPU targets


def _resident_args(op: Op, args: tuple, kwargs: dict) -> tuple[list, tuple] | None:
    """The dispatch arrays among ``args`` and the arguments as natives, if the lane may take
    the call: every array held by a device engine (CuPy or torch), every other argument a
    Python scalar, a slice or a tuple of them (an index, a shape), keywords only scalars and
    axes, no writes, no transform; else ``None``."""
    if op.mutates is not None or op.name in FFT_1D:
        return None
    arrays = []
    natives = []
    for v in args:
        kind = type(v)
        if kind is ndarray or kind is _DeviceScalar:
            data = v._engine_array
            if type(data) is np.ndarray or library_of(type(data)) not in _LANE_LIBRARIES:
                return None
            arrays.append(v)
            natives.append(data)
        elif kind in _PLAIN or ((kind is slice or kind is tuple) and _plain_key(v)):
            natives.append(v)  # a scalar, a shape, an index
        else:
            return None
    if not arrays:
        return None
    for v in kwargs.values():
        kind = type(v)
        if kind not in _PLAIN and not (kind is tuple and all(type(x) is int for x in v)):
            return None  # an out=, a dtype, an array
    return arrays, tuple(natives)


def _resident_run(op: Op, args: tuple, natives: tuple, kwargs: dict, inputs: Inputs, decision: Any) -> Any:
    """Run the call on the engine holding its arrays, if that is the decision and the call is
    not to be timed now; ``_MISS`` otherwise, or where the target refuses or fails (the general
    path then runs it again, records why and falls back)."""
    if decision.sample and not decision.settled:
        return _MISS
    target = decision.target
    for a in inputs.arrays:
        if not target.owns(a._engine_array):
            return _MISS  # another engine: the general path adopts the data
    try:
        result = _execute(op, inputs, decision, lambda: target.run(op, natives, kwargs))
    except Exception:
        return _MISS
    for a, native in zip(args, natives, strict=True):
        if native is result and type(a) is ndarray:
            return a  # handed back as it is (a view op with nothing to do)
    if target.owns(result):  # an array on the target's device: wrapped as it is (``wrap``'s answer)
        return held(result)
    return wrap(result)


# The lane's memo. A loop on a device repeats a few calls on operands of the same dtypes and
# shapes; summarising the inputs, asking the router and resolving the engine's function again at
# each repeat cost more than the kernel launch. So the lane remembers, per call signature, the
# decision and the engine's resolved call, and a repeat runs them while that decision is the
# router's and needs no timing. A host call over the floors that the router keeps on NumPy is
# remembered the same way: asking the router again would cost more than such a call. Nothing is
# remembered while a region is recorded for its plan (``dispatch.routing.live``).
# The compiled path serves those host entries itself (``memo_run`` in dispatch/arrays/_fastpath.c,
# the same key and checks). An operator that NumPy's elision runs into a temporary
# (``_array._elides``) is remembered under a key of its own and run into it, and a list or tuple of
# host arrays (``concatenate([z, -z])``) is keyed by its arrays: otherwise such calls would go
# through the router at every run. The compiled path serves those entries too.

_INEXACT_SCALARS = (np.floating, np.complexfloating)  # NumPy's scalars keyed, as floats are, by type alone
_SEQUENCES = (list, tuple)  # of host arrays (``concatenate``'s), keyed by their arrays
_MEMO_MAX = 1024  # signatures kept; a program that makes more (an int scalar changing in a loop) starts over
_INTO = "into"  # ends the key of an operator's call that NumPy's elision runs into a temporary
# ... into the second of two arrays (``a + b * c``): a key of its own, which the compiled path, whose
# entries run into the first, never serves (the same dtypes in the other order would cast into it)
_INTO_SECOND = "into the second"
# A keyword ``out=`` that is the call's first operand (``x += y``, ``np.add(x, y, out=x)``), keyed
# by this alone: NumPy runs it into that array's memory, from the memo as any host call (the
# write counted before, by ``call``'s ``_writes``).
_IN_PLACE = "in place"
# The memo itself is the router's (``ROUTER.memo``): an entry is (decision, target, run, epoch), served
# while the router's epoch is the entry's; at another epoch, ``_memo_run`` checks it again.


def _memo_key(op: Op, args: tuple, kwargs: dict) -> tuple | None:
    """What the router's decision and the engine's resolution of a lane call depend on: the op,
    the forced target, each array's engine type, dtype, shape and device, every other argument's
    type (and value, but for floats: as ``_oracle.signature``), the keywords; ``None`` for calls
    the memo does not serve (a NumPy array not wrapped, an index, a shape, a write, an array in a
    keyword, a transform on a device). A list or tuple of host arrays (``concatenate``'s), as
    its type and their parts."""
    if op.mutates is not None:
        return None
    parts: list = [op, STATE.forced_name()]
    on_device = False
    for v in args:
        kind = type(v)
        if kind is ndarray:
            data = v._engine_array
            if type(data) is np.ndarray:
                parts.append((np.ndarray, data.dtype, data.shape))
                continue
            library = library_of(type(data))
            on_device = True
            if library == "cupy":
                parts.append((type(data), data.dtype, data.shape, data.device.id))
            elif library == "torch":
                parts.append((type(data), data.dtype, data.shape, data.device))
            else:
                return None
        elif kind is float or kind is complex or isinstance(v, _INEXACT_SCALARS):  # (``x / x.sum()``)
            parts.append(kind)
        elif kind is int or kind is bool or v is None:
            parts.append((kind, v))
        elif kind in _SEQUENCES and v and all(
                type(a) is ndarray and type(a._engine_array) is np.ndarray for a in v):  # ``concatenate([a, b])``
            parts.append((kind, tuple((np.ndarray, a._engine_array.dtype, a._engine_array.shape) for a in v)))
        else:
            return None
    for name, v in kwargs.items():
        kind = type(v)
        if kind is float or kind is complex:
            parts.append((name, kind))
        elif name == "out" and _in_place(args, v):
            parts.append(_IN_PLACE)
        elif kind is int or kind is bool or v is None or (kind is tuple and all(type(x) is int for x in v)):
            parts.append((name, kind, v))
        else:
            return None
    if on_device and op.name in FFT_1D:
        return None
    return tuple(parts)


def _remember_host(memo_key: tuple, op: Op, args: tuple, decision: Any) -> None:
    """Keep a host call the router sends to NumPy (see the memo above), if it has arrays, every
    one on the host, and its decision is the router's cached one for good (not a fallback, nor
    one asked again at each call for its size)."""
    arrays = [a for v in args for a in (v if type(v) in _SEQUENCES else (v,)) if type(a) is ndarray]
    if (not arrays or any(type(a._engine_array) is not np.ndarray for a in arrays)
            or op.work == "random" or decision.live
            or decision.kind is DecisionKind.FALLBACK or router.cached(decision.key) is not decision):
        return
    _keep(memo_key, decision, None, op.func)  # no target: NumPy's function, called as ``_run_numpy`` does


def _remember(memo_key: tuple, op: Op, natives: tuple, kwargs: dict, decision: Any) -> None:
    """Keep what a lane call ran with, if its decision is the router's cached one (a decision
    made for this call alone, an exploration, is not kept; nor one of a sequence of arrays)."""
    if router.cached(decision.key) is not decision or any(type(v) in _SEQUENCES for v in natives):
        return
    try:
        run = decision.target.runner(op, natives, kwargs)
    except Unsupported:
        return
    _keep(memo_key, decision, decision.target, run)


def _keep(memo_key: tuple, decision: Any, target: Any, run: Any) -> None:
    """Store a memo entry, at the router's epoch; a full memo starts over. None of a routed call
    while a region is recorded: its plan must see every call (a forced call is in no region)."""
    if _LIVE.recording and not _forced_key(memo_key):
        return
    memo = ROUTER.memo
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[memo_key] = (decision, target, run, ROUTER.epoch)


def _forced_key(memo_key: tuple) -> bool:
    """Whether a memo key was made under a forced target (its second part, ``_memo_key``'s)."""
    return is_forced(memo_key[1])


def _in_place(args: tuple, out: Any) -> bool:
    """Whether ``out`` is the call's first operand, a host array (``x += y``)."""
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    return bool(args) and out is args[0] and type(out) is ndarray and type(out._engine_array) is np.ndarray


def _native_items(v: list | tuple) -> list | tuple:
    """A memo key's sequence of host arrays, of their data (``_memo_key`` took no other)."""
    return type(v)(a._engine_array for a in v)


def _memo_run(memo_key: tuple, entry: tuple, args: tuple, kwargs: dict, into: ndarray | None = None) -> Any:
    """Run a remembered lane call, if its decision still holds, is not to be timed now and no
    trace or region recording watches; else ``_MISS`` (the general lane path runs it). ``into``: a host
    temporary the result is written into (``call``'s)."""
    decision, target, run, epoch = entry
    if epoch != ROUTER.epoch:  # the decisions changed since, or a region is recorded: is this one still the router's?
        if router.cached(decision.key) is not decision or (_LIVE.recording and not _forced_key(memo_key)):
            return _MISS
        ROUTER.memo[memo_key] = (decision, target, run, ROUTER.epoch)
    if STATE.tracing:
        return _MISS
    if target is not None and (into is not None or "out" in kwargs):
        return _MISS
    if decision.sample:  # as ``_execute`` counts: a settled decision times one call in SETTLED_EVERY
        if not decision.settled or (decision.calls + 1) % SETTLED_EVERY == 0:
            return _MISS
        decision.calls += 1
    if target is None:  # a host call kept on NumPy (noting its BLAS, as ``_run_numpy`` does)
        if memo_key[0].blas:
            blas_spin.ran()
        natives = [a._engine_array if type(a) is ndarray else _native_items(a) if type(a) in _SEQUENCES else a
                   for a in args]
        if into is not None:
            run(*natives, out=into._engine_array)
            return into
        if "out" in kwargs:  # in place (the key says so: ``_IN_PLACE``)
            run(*natives, **{**kwargs, "out": natives[0]})
            return args[0]
        result = run(*natives, **kwargs)
        if type(result) is np.ndarray:
            for a in args:
                if type(a) is ndarray and a._engine_array is result:
                    return a
            return held(result)
        return wrap(result)
    natives = []
    for a in args:
        if type(a) is ndarray:
            natives.append(a._engine_array)
        else:
            natives.append(a)
    natives = tuple(natives)
    try:
        result = run(natives, kwargs)
    except Exception:  # the general path runs it again, and records the refusal or failure
        return _MISS
    for a, native in zip(args, natives, strict=True):
        if native is result and type(a) is ndarray:
            return a
    if target.owns(result):
        return held(result)
    return wrap(result)


def device_view(x: ndarray, key: Any) -> Any:
    """``x[key]`` for data a device engine holds and a key of slices, integers, ``None`` and
    ``Ellipsis`` that leaves an axis (a row ``x[t]``; all of them integers gives NumPy a scalar):
    a view on that engine, as the router's rule for indexing places it (where the data is),
    without routing; ``_MISS`` for any other key, or one the engine refuses (torch takes no
    negative step, an integer out of range)."""
    keys = key if type(key) is tuple else (key,)
    if not keys or any(type(k) not in _VIEW_PARTS for k in keys) or not _plain_key(keys):
        return _MISS
    data = x._engine_array
    if int in map(type, keys) and sum(type(k) is int for k in keys) >= len(data.shape):
        return _MISS
    library = library_of(type(data))
    if library not in _LANE_LIBRARIES:
        return _MISS
    try:
        # CuPy's view by slices is NumPy's, with nothing to check; torch's goes through its target
        view = data[key] if library == "cupy" else _engine_of(data).run(GETITEM, (data, key), {})
    except Exception:  # a refusal: the general path runs it and records why
        return _MISS
    if data.nbytes >= mirrors.MIN_BYTES:
        mirrors.viewed(view, data)  # (mirrors) its host reads may come from data's host copy
    return held(view)


_VIEW_PARTS = frozenset({slice, int, type(None), type(Ellipsis)})
_KEY_PARTS = _PLAIN | {slice, type(Ellipsis)}


def _plain_key(v: slice | tuple) -> bool:
    """A slice, or a tuple of scalars, slices and ``Ellipsis`` (an index, a shape, axes)."""
    if type(v) is slice:
        return type(v.start) in _PLAIN and type(v.stop) in _PLAIN and type(v.step) in _PLAIN
    return all(type(x) in _KEY_PARTS and (type(x) is not slice or _plain_key(x)) for x in v)


def call(op: Op, args: tuple, kwargs: dict, into: ndarray | None = None, sized: bool = True) -> Any:
    """Run ``op`` on the target the router picks; NumPy on the host when that target refuses.

    ``into``: a host temporary among an operator's operands that NumPy may write the result
    into, as NumPy's own temporary elision would (``_array._elides`` checked it may).
    ``sized``: the arrays' sizes tell the call's work (not an FFT padded to ``n`` points), so
    small host arrays may skip the router."""
    if op.local or (mirrors.counted() and (op.mutates is not None or kwargs or len(args) > 1)):  # (mirrors)
        _writes(op, args, kwargs)  # what the call may write, or wrap as it is
    if STATE.floored and sized:  # the host shortcut's mode (``host_shortcut``)
        if not op.local:
            hargs, floor = under_floors(op, args)
        else:  # views, casts and copies of host data: NumPy's
            hargs, floor = _small_on_host(args, _ANY_SIZE), _ANY_SIZE
        hkwargs = _small_kwargs(kwargs, floor) if hargs is not None else None
        if hkwargs is not None:
            if STATE.tracing:  # a trace records the call where the program runs it untraced
                return _traced_under_floor(op, args, kwargs, hargs, hkwargs, into)
            return _under_floor(op, args, kwargs, hargs, hkwargs)
    if ROUTER is None:
        routing()
    memo_key = _memo_key(op, args, kwargs)
    if memo_key is not None and into is not None:  # elision: an entry of its own, run into the temporary
        memo_key += (_INTO_SECOND if into is not args[0] and type(args[0]) is ndarray else _INTO,)
    if memo_key is not None:
        entry = ROUTER.memo.get(memo_key)
        if entry is not None:
            result = _memo_run(memo_key, entry, args, kwargs, into)
            if result is not _MISS:
                return result
    lane = _resident_args(op, args, kwargs) if sized else None
    if lane is not None:
        arrays, natives = lane
        inputs = Inputs(arrays, _layout(op, args, kwargs))
        if op.ufunc is not None and len(arrays) > 1:
            inputs.size = broadcast_size([tuple(a.shape) for a in arrays], inputs.size)
        decision = router.decide(op, inputs, args, kwargs)
        result = _resident_run(op, args, natives, kwargs, inputs, decision)
        if result is not _MISS:
            if memo_key is not None:  # (a lane call: its arrays are on a device)
                _remember(memo_key, op, natives, kwargs, decision)
            if _LIVE.recording:
                _LIVE.note(op, inputs, decision, result)
            return result
    else:
        arrays = _collect(args, kwargs)
        if _subclassed(arrays):  # a masked array, a matrix: NumPy's own rules, never a target that drops them
            return _run_numpy(op, args, kwargs)
        inputs = Inputs(arrays, _layout(op, args, kwargs))
        if op.ufunc is not None and len(arrays) > 1:
            inputs.size = broadcast_size([tuple(a.shape) for a in arrays], inputs.size)
        if op.name in FFT_1D:
            _fft_points(inputs, args, kwargs)
        decision = router.decide(op, inputs, args, kwargs)
    target = decision.target
    if target is NUMPY:
        if decision.kind is DecisionKind.FALLBACK:  # a refusal remembered for this kind of call: still counted
            _tracing().fallback(op, decision.reason.removeprefix(router.FALLBACK))
        run = (lambda: _run_numpy(op, args, kwargs)) if into is None else (lambda: _run_into(op, args, into))
        result = _execute(op, inputs, decision, run)
        if memo_key is not None and lane is None:
            _remember_host(memo_key, op, args, decision)
        if _LIVE.recording:
            _LIVE.note(op, inputs, decision, result)
        return result
    try:
        result = _execute(op, inputs, decision, lambda: _run_on(target, op, args, kwargs))
        if _LIVE.recording:
            _LIVE.note(op, inputs, decision, result)
        return result
    except Unsupported as exc:
        why = f"{target.name} refused: {exc}"
        if exc.lasting:
            router.refused(op, inputs, target, why)
        else:
            router.refused_this_call(op, inputs, target, why)
    except Exception as exc:  # out of memory, driver errors, a backend bug: NumPy decides
        why = failure(target, exc)
        router.failed(op, inputs, target, why)
    _tracing().fallback(op, why)
    fallback = Decision(NUMPY, DecisionKind.FALLBACK, router.FALLBACK + why, key=decision.key)
    result = _execute(op, inputs, fallback, lambda: _run_numpy(op, args, kwargs))
    if _LIVE.recording:
        _LIVE.note(op, inputs, fallback, result)
    return result


def _writes(op: Op, args: tuple, kwargs: dict) -> None:
    """Before a call: host memory it writes loses its device copies (``out=``, a ufunc's
    positional outputs, the array an op writes into); NumPy arrays it wraps as they are (a
    view of the caller's array, ``asarray``) are the caller's (``mirrors.escape``)."""
    out = kwargs.get("out")
    for o in (out if isinstance(out, tuple) else (out,)) if out is not None else ():
        mirrors.wrote(o._engine_array if isinstance(o, Wrapper) else o)
    if op.mutates is not None and len(args) > op.mutates:
        a = args[op.mutates]
        mirrors.wrote(a._engine_array if isinstance(a, Wrapper) else a)
    at = _out_position(op)
    if at is not None and len(args) > at:
        for a in args[at:] if isinstance(op.func, np.ufunc) else args[at:at + 1]:
            mirrors.wrote(a._engine_array if isinstance(a, Wrapper) else a)
    if op.local:
        for a in args:
            if type(a) is np.ndarray:
                mirrors.escape(a)


_OUT_AT: dict[Any, int | None] = {}


def _device_outputs(op: Op, args: tuple) -> list:
    """The device arrays a host call writes into by position: the one it mutates, or its outputs
    (a ufunc's after its inputs, ``clip(a, lo, hi, out)``)."""
    if op.mutates is not None:
        outputs = args[op.mutates:op.mutates + 1]
    else:
        at = _out_position(op)
        if at is None:
            return []
        outputs = args[at:] if isinstance(op.func, np.ufunc) else args[at:at + 1]
    return [a for a in outputs if isinstance(a, Wrapper) and type(a._engine_array) is not np.ndarray]


def _out_position(op: Op) -> int | None:
    """Where ``out`` may be passed by position to the op's function (a ufunc's outputs follow
    its inputs; ``clip(a, lo, hi, out)``, ``sum(a, axis, dtype, out)``), or ``None``."""
    func = op.func
    if func in _OUT_AT:
        return _OUT_AT[func]
    at = getattr(func, "nin", None) if isinstance(func, np.ufunc) else None
    if at is None:
        import inspect

        try:
            names = [p.name for p in inspect.signature(func).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            names = []
        at = names.index("out") if "out" in names else None
    _OUT_AT[func] = at
    return at


def _under_floor(op: Op, args: tuple, kwargs: dict, hargs: list, hkwargs: dict) -> Any:
    """NumPy's result for a call under the floors, on its unwrapped host arguments."""
    if op.blas:
        blas_spin.ran()
    result = op.func(*hargs, **hkwargs)
    return wrap(result, out_of=(args, kwargs))  # an argument handed back (an out by position), a view naming it


def _traced_under_floor(op: Op, args: tuple, kwargs: dict, hargs: list, hkwargs: dict,
                        into: ndarray | None = None) -> Any:
    """``_under_floor`` (into the temporary ``into``, where NumPy would elide), recorded in the
    open trace with why it ran on NumPy."""
    routing()
    inputs = Inputs(_collect(args, kwargs))
    if STATE.host_only:
        kind, reason = DecisionKind.FORCED, "forced numpy"
    elif op.local:
        kind, reason = DecisionKind.LOCAL, router.LOCAL_REASON
    elif inputs.size <= floors.SMALL:
        kind, reason = DecisionKind.SMALL, router.SMALL_REASON
    else:
        kind, reason = DecisionKind.FLOOR, router.FLOOR_REASON
    decision = Decision(NUMPY, kind, reason)
    run = (lambda: _under_floor(op, args, kwargs, hargs, hkwargs)) if into is None else (
        lambda: _run_into(op, args, into))
    return _execute(op, inputs, decision, run)


def _execute(op: Op, inputs: Inputs, decision: Any, run: Any) -> Any:
    """Run, and when the decision asks to learn or a trace is open, time it and record it.

    Device work is timed with device events read later (no sync); the oracle policy, which
    must compare targets exactly, synchronises."""
    if regions.RECORDING:  # (regions) a region being recorded for the planner times each call on its own
        return regions.observe(op, inputs, decision.target, run)
    tracing_on = STATE.tracing and not ROUTER.history.count(op.name)
    sample = decision.sample
    if sample and decision.settled:
        decision.calls += 1
        sample = decision.calls % SETTLED_EVERY == 0
    if not (sample or tracing_on):
        return run()
    target = decision.target
    before, kept = _staging.moved(), mirrors.served()
    events = target.events() if sample else None
    if sample and inputs.devices and inputs.devices != {target.device}:
        _drain(inputs, target)
    start = time.perf_counter()
    result = run()
    if sample and router.policy() == "oracle":
        target.synchronize()
        events = None
    seconds = time.perf_counter() - start
    if sample:
        if events is not None:
            events[1].record()
            router.pend(decision, events, seconds)  # a device's time, read when it has passed the events
        else:
            router.observe(decision, seconds)
    if tracing_on:
        after = _staging.moved()
        tracing = _tracing()
        tracing.record(tracing.CallRecord(
            op=op.name,
            shapes=[list(a.shape) for a in inputs.arrays],
            dtypes=[str(d) for d in inputs.dtypes],
            target=target.name,
            reason=decision.reason,
            seconds=seconds,
            predicted_seconds=decision.predicted,
            bytes_moved=sum(after.values()) - sum(before.values()),
            site=tracing.call_site() if tracing.SITES else None,
            bytes_kept=mirrors.served() - kept,
        ))
    return result


def _drain(inputs: Inputs, target: Target) -> None:
    """Wait for the queued work of the devices a timed call crosses to or from, before its clock
    starts. Its copy is ordered after the kernels queued before it, so it would wait for them
    anyway; but they are earlier calls' work, which the program waits for in any case when it
    reads its results, and on the clock they would be charged to whichever target crosses, and
    the router would learn from the queue rather than the call."""
    target.synchronize()
    for a in inputs.arrays:
        if type(a) is ndarray and type(a._engine_array) is not np.ndarray:
            engine = _engine_of(a._engine_array)
            if engine is not target:
                engine.synchronize()


def failure(target: Target, exc: BaseException) -> str:
    """Why ``target`` failed a call (out of memory, a driver error, a backend bug), in words; out of
    memory gives back its device's mirrors first, the memory that goes first under pressure."""
    why = f"{target.name} failed: {type(exc).__name__}: {_first_line(exc)}"
    if "out of memory" in why.lower():
        mirrors.evict(target.device)  # (mirrors)
    return why


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def call_fast_unary(op: Op, a: Any) -> Any:
    """``f(a)`` for a one-operand ufunc (``np.abs(x)`` in a loop): NumPy straight away for a
    host array the host shortcut takes (``host_shortcut``), else the full call path."""
    if STATE.plain and type(a) is ndarray:
        data = a._engine_array
        if type(data) is np.ndarray:
            n = data.size
            if n <= op.floor or host_shortcut(op, n):
                result = op.func(data)
                if type(result) is np.ndarray:
                    return held(result)
                return wrap(result)  # a scalar, or modf's pair
    return call(op, (a,), {})


def call_fast_ufunc(op: Op, a: Any, b: Any) -> Any:
    """``a <op> b`` for an operator: NumPy straight away when both live on the host and the
    size is under the op's floor (no target can win there), else the full call path."""
    if STATE.plain:
        ad = a._engine_array if type(a) is ndarray else a
        bd = b._engine_array if type(b) is ndarray else b
        if ((type(ad) is np.ndarray or isinstance(ad, _SCALARS))
                and (type(bd) is np.ndarray or isinstance(bd, _SCALARS))):  # (a NumPy scalar: ``x / x.sum()``)
            # (sizes read without getattr's default: a Python scalar would raise inside it)
            na = ad.size if type(ad) is np.ndarray else 1
            nb = bd.size if type(bd) is np.ndarray else 1
            n = na if na >= nb else nb
            if type(ad) is np.ndarray and type(bd) is np.ndarray and ad.shape != bd.shape:
                n = broadcast_size([ad.shape, bd.shape], n)
            if host_shortcut(op, n):
                if op.blas:
                    blas_spin.ran()
                result = op.func(ad, bd)
                if type(result) is np.ndarray:
                    return held(result)
                return wrap(result)  # a scalar, or divmod's pair
    return call(op, (a, b), {})

