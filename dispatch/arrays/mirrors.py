"""Copies of arrays kept on the other side (mirrors): a host array's on a device, a device
array's on the host, each kept while neither side is written.

To a device. A host array a device call reads is copied there once: the copy is kept beside the
host data and served to later calls on that device (k-means' points, a design matrix, read by
every iteration's product) until the host memory is written. A large slice of host memory
(``p[1:-1, 2:]``, a stencil's shifted slices: half of the memory or more) is read as the same
slice of the memory's copy, made once (``through_owner``). Validity is one counter per block of
host memory (the NumPy array that owns it, found through ``.base``): every write dispatch sees
bumps it (``wrote``), whichever array or view wrote, so a view's write invalidates the copies of
its base and of every other view. The writes dispatch sees: ``__setitem__``, ``out=``, in-place
operators, the in-place methods (``sort``, ``fill``, ``put``...), ``ufunc.at`` and every op the
catalog marks as writing (``Op.mutates``); while any mirror is kept the compiled fast path hands
to Python the writes to memory that has copies (or had: its counter is kept), and every call
that may write through ``out=`` (``_compiled.set_mirrors``).

To the host. Device data read on the host (a host target's call on it, printing, ``tolist``,
``item``) is copied back once (``read``): the copy is kept, read-only, and served to later reads
until the device memory is written. A small view of large device data (a row, ``x[t]``, read in
a loop) is read from its base's host copy: the view's offset and strides mapped into the copy's
bytes; the base is copied back once such reads since it was last written have cost about what
the copy costs (each a transfer's latency, worth ``READ_BYTES`` of the bus: a loop that writes
the base between two reads never pays for a whole copy each time, and one that reads 40 rows of
5 MB pays it at the 40th), and it is served ``HOME_VIEWS`` such reads, then the host becomes the
array's home (``home``: a draw read row by row in a Python loop). Device data under ``MIN_BYTES``
has no copy kept; its elements read or written one by one from Python (a scalar loop over a
reduction's result) make the host its home once they have cost about what copying it costs, by
the same measure (``element_read``). Device memory has no
``.base`` every engine shares (CuPy and torch exchange it zero-copy through DLPack), so a device
write is matched by address: it drops every host copy of device memory it overlaps (``wrote``),
whichever array, view or engine wrote. Being read-only, a host copy cannot be written by
anything dispatch runs: a host call whose result is a view of one takes it over (``claimed``),
and ``numpy.asarray(x)`` hands out a copy of its own (``handed``), made from the kept one where
it is valid.

What dispatch cannot see is a write through memory it does not hold: the host memory handed out
by ``numpy.asarray(x)`` (``__array__``, ``.data``, DLPack), a NumPy array wrapped without a copy
(``dispatch.asarray(a)``), whose caller still holds ``a``, and device memory shared through DLPack
or passed in as a CuPy array or torch tensor. Such memory is the caller's (``escape``): its
mirrors are dropped at once and it is never mirrored again, so no stale copy can be read. Memory
under ``MIN_BYTES`` is never mirrored (a copy that small costs less than the bookkeeping), which
keeps the fast path for small arrays whole.

Mirrors are the first thing given back under memory pressure: a device keeps at most
``budget()`` bytes of them, the host ``host_budget()``, least recently used dropped first, and all
of a place's are dropped when a call there runs out of memory (``evict``). ``valid_on`` tells the
router whether an input can be read somewhere without a copy.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from dispatch import targets
from dispatch.arrays import _compiled
from dispatch.base import box
from dispatch.base.devices import DASK, HOST, Device, device_of, library_of, parse_device

__all__ = [
    "MIN_BYTES",
    "budget",
    "claimed",
    "clear",
    "element_read",
    "escape",
    "evict",
    "handed",
    "home",
    "homed",
    "homes",
    "host_budget",
    "keep",
    "keepable",
    "kept",
    "lookup",
    "read",
    "readable",
    "released",
    "served",
    "set_budget",
    "set_host_budget",
    "stats",
    "through_owner",
    "valid",
    "valid_on",
    "viewed",
    "wrote",
]

MIN_BYTES = 1 << 20  # smaller memory is copied again each time: cheaper than keeping it
_DEFAULT_BUDGET = 4 << 30  # bytes of mirrors a device keeps (least recently used dropped first)
_DEFAULT_HOST_BUDGET = 2 << 30  # bytes of device data's copies the host keeps


class _Mirror:
    __slots__ = ("copy", "device", "host", "nbytes", "owner", "version")

    def __init__(self, host: Any, owner: int, version: int, copy: Any, device: Any, nbytes: int) -> None:
        self.host, self.owner, self.version = host, owner, version
        self.copy, self.device, self.nbytes = copy, device, nbytes


class _HostMirror:
    """Device data's host copy: ``copy`` (read-only) of ``native``, whose memory is ``lo``..``hi``
    on ``device``."""

    __slots__ = ("copy", "device", "hi", "lo", "native", "nbytes", "views")

    def __init__(self, native: Any, copy: np.ndarray, span: tuple[Device, int, int]) -> None:
        key = id(native)
        self.native = weakref.ref(native, lambda ref: _forget_native(key, ref))
        self.copy, self.nbytes = copy, copy.nbytes
        self.device, self.lo, self.hi = span
        self.views = 0  # small views of it served on the host


# id(owner) -> [version, weakref(owner)]: the memory blocks with mirrors, and their write counters
_versions: dict[int, list] = {}
# (id(host data), target name) -> _Mirror, least recently used first
_mirrors: OrderedDict[tuple[int, str], _Mirror] = OrderedDict()
# id(owner) -> weakref(owner): memory that is the caller's (handed out, or wrapped without a copy)
_escaped: dict[int, Any] = {}
# id(device array) -> _HostMirror, least recently used first
_host_mirrors: OrderedDict[int, _HostMirror] = OrderedDict()
# id(large device array) -> [weakref(it), its span, small views of it read on the host since it was
# last written]: a base copied back, and kept, once their latency has cost about the copy
_view_reads: dict[int, list] = {}
READ_BYTES = 1 << 17  # a small read's latency (10-20 µs), in the bytes a copy moves meanwhile
# id(small device view) -> (weakref(it), weakref(the large device array indexed for it)): its base,
# where the engine's own link is missing or names another array (torch's ``_base`` is the root)
_parents: dict[int, tuple] = {}
HOME_VIEWS = 16  # small views read on the host from a base's copy, none on the device: the host is its home
# id(small device array) -> [weakref(it), its elements read from Python]: the host its home once
# those reads (each a round trip to the device) have cost about what copying it costs
_element_reads: dict[int, list] = {}
# id(device array) -> (device, lo, hi): device memory that is the caller's (shared, or passed in)
_escaped_spans: dict[int, tuple[Device, int, int]] = {}
_budget = _DEFAULT_BUDGET
_host_budget = _DEFAULT_HOST_BUDGET
_counts = {"hits": 0, "hit_bytes": 0, "kept": 0, "invalidated": 0, "evicted": 0, "escaped": 0,
           "host_hits": 0, "host_hit_bytes": 0, "host_misses": 0, "host_kept": 0, "host_invalidated": 0,
           "host_evicted": 0, "host_claimed": 0, "host_homes": 0, "element_homes": 0, "slices": 0}


def _owner(data: np.ndarray) -> np.ndarray:
    """The NumPy array owning the memory ``data`` views (itself where it owns it)."""
    base = data.base
    while type(base) is np.ndarray or isinstance(base, np.ndarray):
        data, base = base, base.base
    return data


def _live() -> None:
    """Tell the compiled path whether writes to memory with copies must take the Python path (any
    mirror kept), and which memory that is (``_versions``, read at each write)."""
    _compiled.set_mirrors(bool(_mirrors), MIN_BYTES, _versions)


# ---- host data's copies on a device -----------------------------------------------------------------


def lookup(data: np.ndarray, target: Any) -> Any:
    """The copy of ``data`` on ``target`` (its own array type) if one is kept and still valid, else ``None``."""
    if not _mirrors:
        return None
    key = (id(data), target.name)
    mirror = _mirrors.get(key)
    if mirror is None:
        return None
    if not _valid(mirror, data):
        _drop(key)  # written since, or another array at a reused address
        return None
    _mirrors.move_to_end(key)
    _counts["hits"] += 1
    _counts["hit_bytes"] += mirror.nbytes
    return mirror.copy


def _valid(mirror: _Mirror, data: np.ndarray) -> bool:
    state = _versions.get(mirror.owner)
    return mirror.host() is data and state is not None and state[0] == mirror.version


def _slice_of(data: np.ndarray, owner: np.ndarray) -> tuple | None:
    """The basic slicing of ``owner`` (C-contiguous) that ``data`` is, where it is one with steps of
    one or more along each axis and spans at least half of it; else ``None``. A stencil's shifted
    slices (``p[1:-1, 2:]``, ``padded[:, i:i + n]``) are such views."""
    if (data.ndim != owner.ndim or data.dtype != owner.dtype or 2 * data.nbytes < owner.nbytes
            or not owner.flags.c_contiguous or data.size == 0):
        return None
    itemsize = owner.itemsize
    offset = data.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    if offset < 0 or offset % itemsize:
        return None
    key = []
    for n, stride, size, unit in zip(data.shape, data.strides, owner.shape, owner.strides, strict=True):
        start, offset = divmod(offset, unit) if unit else (0, offset)
        step = 1 if n == 1 else stride // unit if unit and stride > 0 and stride % unit == 0 else 0
        if step == 0 or start + (n - 1) * step >= size:
            return None
        key.append(slice(start, start + (n - 1) * step + 1, step))
    return tuple(key) if offset == 0 else None


def through_owner(data: np.ndarray, target: Any) -> tuple[Any, Any] | None:
    """A device copy of ``data``, a large slice of host memory (``_slice_of``), read by a device
    call: the same slice of the memory's copy there, which is made once (and kept: ``keep``) where
    none is valid; and that copy, for ``released``. A loop over shifted slices of one array then
    copies the array once, as a plan prices its source. ``None`` where ``data`` is no such slice
    or the memory is not dispatch's own."""
    owner = _owner(data)
    if owner is data or owner.nbytes < MIN_BYTES or not keepable(owner):
        return None
    key = _slice_of(data, owner)
    if key is None:
        return None
    copy = lookup(owner, target)
    if copy is None:
        copy = target.from_host(owner)
        keep(owner, target, copy)
    _counts["slices"] += 1
    return copy[key], copy


def _serves_slice(mirror: _Mirror | None, data: np.ndarray, owner: np.ndarray) -> bool:
    """Whether ``mirror``, a copy of ``owner``, is valid and serves ``data``, a slice of it
    (``through_owner``)."""
    return mirror is not None and owner is not data and _valid(mirror, owner) and _slice_of(data, owner) is not None


def valid(data: Any, name: str) -> bool:
    """Whether the target ``name`` keeps a copy of ``data`` that is still valid (nothing counted,
    nothing reordered: a price asks, a call reads with ``lookup``). For small device ``data``
    (asked for a host target): whether the host keeps a valid copy of the base it views (a row
    read in a loop; large device data's own host copy is priced as a copy, as before, since a
    plan made while it is valid is kept when a write drops it)."""
    if type(data) is not np.ndarray:
        return bool(_host_mirrors) and _base_valid(data)
    if not _mirrors:
        return False
    mirror = _mirrors.get((id(data), name))
    if mirror is None and data.base is not None:  # a slice served from its memory's copy
        owner = _owner(data)
        return _serves_slice(_mirrors.get((id(owner), name)), data, owner)
    return mirror is not None and _valid(mirror, data)


def _host_valid(native: Any) -> bool:
    if not _host_mirrors:
        return False
    mirror = _host_mirrors.get(id(native))
    if mirror is not None:
        return mirror.native() is native
    return _base_valid(native)


def _base_valid(native: Any) -> bool:
    if native.nbytes >= MIN_BYTES:
        return False
    base = _base_of(native)
    mirror = _host_mirrors.get(id(base)) if base is not None else None
    return mirror is not None and mirror.native() is base


def keepable(data: np.ndarray) -> bool:
    """Whether a copy of ``data`` on a device would be kept (``keep``'s rule on the host side)."""
    owner = _owner(data)
    return owner.nbytes >= MIN_BYTES and id(owner) not in _escaped and _compiled.MIRRORS_SAFE


def keep(data: np.ndarray, target: Any, copy: Any) -> None:
    """Keep ``copy`` (``data`` copied to ``target``) for later calls, where ``data`` is large
    enough and dispatch's own (not handed out or wrapped without a copy)."""
    owner = _owner(data)
    if owner.nbytes < MIN_BYTES or id(owner) in _escaped or target.device.is_host or not _compiled.MIRRORS_SAFE:
        return
    state = _versions.get(id(owner))
    if state is None or state[1]() is not owner:
        oid = id(owner)
        state = _versions[oid] = [0, weakref.ref(owner, lambda _, oid=oid: _forget_owner(oid))]
    key = (id(data), target.name)
    if key in _mirrors:
        _drop(key)
    _mirrors[key] = _Mirror(weakref.ref(data), id(owner), state[0], copy, target.device, data.nbytes)
    _counts["kept"] += 1
    _fit(target.device)
    _live()


def counted() -> bool:
    """Whether a write may need bookkeeping: some host memory has device copies, or had (its
    write counter kept while it lives), or some device memory has host copies."""
    return bool(_versions) or bool(_host_mirrors) or bool(_view_reads)


def released(result: Any, handed: list[Any]) -> None:
    """A device call handed back one of the mirrors it was given (or a view of one) as its result:
    the program may now write it there, so it is no longer a copy of the host data."""
    base = getattr(result, "_base", None) if hasattr(result, "_base") else getattr(result, "base", None)
    for copy in handed:
        if result is copy or base is copy:
            for key, mirror in list(_mirrors.items()):
                if mirror.copy is copy:
                    _drop(key)


# ---- device data's copies on the host ---------------------------------------------------------------


def readable(native: Any) -> bool:
    """Whether ``native`` is device memory whose host copies may be kept (a GPU's CuPy array or
    torch tensor; not host data, nor a Dask array, which has no memory yet)."""
    device = device_of(native)
    return not device.is_host and device != DASK


def read(native: Any) -> np.ndarray:
    """``native``'s data on the host, to read and not to write: its kept host copy where one is
    valid, else copied back (and kept, read-only, where large enough and dispatch's own)."""
    if _host_mirrors:
        mirror = _host_mirrors.get(id(native))
        if mirror is not None:
            if mirror.native() is native:
                _host_mirrors.move_to_end(id(native))
                _counts["host_hits"] += 1
                _counts["host_hit_bytes"] += mirror.nbytes
                return mirror.copy
            _drop_host(id(native))  # another array at a reused address
    served = _from_base(native, True)
    if served is not None:
        return served
    host = _copy_back(native)
    if host.nbytes >= MIN_BYTES and readable(native):
        _counts["host_misses"] += 1
        _keep_host(native, host)
    return host


def handed(native: Any) -> np.ndarray:
    """``native``'s data as a host array of the caller's own, to write as it likes: a copy of the
    kept host copy where one is valid (no device transfer), else copied back (and not kept)."""
    mirror = _host_mirrors.get(id(native)) if _host_mirrors else None
    if mirror is not None and mirror.native() is native:
        _host_mirrors.move_to_end(id(native))
        _counts["host_hits"] += 1
        _counts["host_hit_bytes"] += mirror.nbytes
        return mirror.copy.copy(order="K")
    served = _from_base(native, False)
    if served is not None:
        return served.copy(order="K")
    return _copy_back(native)


def viewed(view: Any, parent: Any) -> None:
    """``view`` (device data) was taken from ``parent`` by indexing (``x[t]``): a small view of
    large data, whose host reads ``read`` may serve from ``parent``'s host copy."""
    if view.nbytes >= MIN_BYTES or parent.nbytes < MIN_BYTES:
        return
    key = id(view)
    try:
        ref = weakref.ref(view, lambda _, key=key: _parents.pop(key, None))
        _parents[key] = (ref, weakref.ref(parent))
    except TypeError:  # an engine's array without weak references: served through its own link
        return


def homes() -> bool:
    """Whether some host copy may have become its device data's home (a cheap test first)."""
    return bool(_host_mirrors) and _counts["host_hits"] >= HOME_VIEWS


def home(native: Any) -> np.ndarray | None:
    """``native``'s host copy where the host has become its home: it served ``HOME_VIEWS`` small
    views read on the host since it was made (its device data unwritten, so read nowhere else
    since), taken out of the mirrors and writable, for the array to hold from now on; else
    ``None``. The caller keeps the device data as the new host array's device copy (``keep``)."""
    mirror = _host_mirrors.get(id(native)) if _host_mirrors else None
    if mirror is None or mirror.views < HOME_VIEWS or mirror.native() is not native:
        return None
    _drop_host(id(native))
    _counts["host_homes"] += 1
    copy = _writable(mirror.copy)
    return copy if copy.flags.writeable else None


def _base_of(native: Any) -> Any:
    """The device array ``native`` views (CuPy's ``base``, torch's ``_base``), else ``None``."""
    if _parents:
        entry = _parents.get(id(native))
        if entry is not None and entry[0]() is native:
            parent = entry[1]()
            if parent is not None:
                return parent
    library = library_of(type(native))
    if library == "cupy":
        return native.base
    if library == "torch":
        return native._base
    return None


def _from_base(native: Any, count: bool) -> np.ndarray | None:
    """``native``, a small view of large device data, read from its base's valid host copy (a
    read-only view of it); ``None`` where no copy serves it. ``count``: a read counted, that
    copies the base back and keeps it once such reads since it was written cost about as much."""
    base = _base_of(native)
    if base is None or native.nbytes >= MIN_BYTES:
        return None
    mirror = _host_mirrors.get(id(base)) if _host_mirrors else None
    if mirror is not None and mirror.native() is not base:
        mirror = None
    if mirror is None:
        if not count or base.nbytes < MIN_BYTES or not readable(base):
            return None
        entry = _view_reads.get(id(base))
        if entry is None or entry[0]() is not base:
            span = _span(base)
            if span is None:
                return None
            key = id(base)
            entry = _view_reads[key] = [weakref.ref(base, lambda _, key=key: _view_reads.pop(key, None)), span, 0]
        entry[2] += 1
        if not _repaid(entry[2], base.nbytes):
            return None
        del _view_reads[id(base)]
        host = _copy_back(base)
        _counts["host_misses"] += 1
        _keep_host(base, host)
        mirror = _host_mirrors.get(id(base))
        if mirror is None or mirror.copy is not host:
            return None  # not kept (memory the caller's)
    view = _view_of(mirror, native)
    if view is not None:
        mirror.views += 1
        _host_mirrors.move_to_end(id(base))
        _counts["host_hits"] += 1
        _counts["host_hit_bytes"] += view.nbytes
    return view


def _repaid(reads: int, nbytes: int) -> bool:
    """Whether ``reads`` small reads of device data, each a transfer's latency, have cost about
    what copying its ``nbytes`` to the host costs."""
    return reads >= max(2, nbytes // READ_BYTES)


def element_read(native: Any) -> bool:
    """An element of ``native``, device data under ``MIN_BYTES``, read or written from Python
    (``z[i]`` in a scalar loop over a reduction's result): counted. Whether such accesses have
    now cost about what copying it costs, so that the host should be its home from now on (the
    caller moves it, where nothing else holds its memory, and counts it: ``homed``)."""
    key = id(native)
    entry = _element_reads.get(key)
    if entry is None or entry[0]() is not native:
        try:
            entry = _element_reads[key] = [weakref.ref(native, lambda _, key=key: _element_reads.pop(key, None)), 0]
        except TypeError:  # an engine's array without weak references: never counted
            return False
    entry[1] += 1
    return _repaid(entry[1], native.nbytes)


def homed(native: Any) -> np.ndarray:
    """``native``'s data copied to the host, writable, to be the array's own from now on."""
    _element_reads.pop(id(native), None)
    _counts["element_homes"] += 1
    return _writable(_copy_back(native))


def _view_of(mirror: _HostMirror, native: Any) -> np.ndarray | None:
    """``native``'s elements in ``mirror``'s copy, where the copy has its device data's layout
    (the same strides, contiguous: byte ``lo + k`` of the device memory is byte ``k`` of the copy)."""
    span, base = _span(native), mirror.native()
    copy = mirror.copy
    if span is None or base is None or span[0] != mirror.device or span[1] < mirror.lo or span[2] > mirror.hi:
        return None
    if _strides(base) != copy.strides or not (copy.flags.c_contiguous or copy.flags.f_contiguous):
        return None
    try:
        dtype = targets.engine_of(native).dtype_of(native)
    except Exception:  # (a dtype with no NumPy counterpart: copied as before)
        return None
    raw = copy.ravel(order="K").view(np.uint8)  # the copy's bytes, in memory order
    try:
        view = np.ndarray(tuple(native.shape), dtype, buffer=raw, offset=_pointer(native) - mirror.lo,
                          strides=_strides(native))
    except ValueError:  # (NumPy finds it outside the copy: copied as before)
        return None
    view.flags.writeable = False
    return view


def _pointer(native: Any) -> int:
    return native.data.ptr if library_of(type(native)) == "cupy" else native.data_ptr()


def _strides(native: Any) -> tuple[int, ...]:
    if library_of(type(native)) == "cupy":
        return tuple(native.strides)
    itemsize = native.element_size()
    return tuple(s * itemsize for s in native.stride())


def claimed(result: Any) -> Any:
    """A host call's ``result`` with any view of a kept host copy taken over: the copy is no
    longer one (its memory is the result's now, to write), and is writable again."""
    if not _host_mirrors:
        return result
    if isinstance(result, (tuple, list)):
        items = [claimed(r) for r in result]
        if all(a is b for a, b in zip(items, result, strict=True)):
            return result
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if not isinstance(result, np.ndarray) or result.flags.writeable:
        return result
    owner = _owner(result)
    for key, mirror in list(_host_mirrors.items()):
        if _owner(mirror.copy) is owner:
            _drop_host(key)
            _counts["host_claimed"] += 1
            return _writable(result)
    return result


def _writable(view: np.ndarray) -> np.ndarray:
    """``view`` made writable, with the arrays it views; a writable copy where NumPy refuses (memory
    that a torch tensor owns)."""
    chain = []
    a: Any = view
    while isinstance(a, np.ndarray):
        chain.append(a)
        a = a.base
    try:
        for a in reversed(chain):
            a.flags.writeable = True
    except ValueError:
        return view.copy(order="K")
    return view


def _copy_back(native: Any) -> np.ndarray:
    try:
        return targets.host_array(native)
    except MemoryError:
        if not evict(HOST):
            raise
        return targets.host_array(native)  # the host's mirrors given back first


def _keep_host(native: Any, host: np.ndarray) -> None:
    span = _span(native)
    if span is None or _escaped_overlap(span):
        return
    host.flags.writeable = False  # nothing dispatch runs may write it unseen
    key = id(native)
    _drop_host(key)
    _host_mirrors[key] = _HostMirror(native, host, span)
    _counts["host_kept"] += 1
    _fit_host()


def _span(native: Any) -> tuple[Device, int, int] | None:
    """The device and the bytes (``lo`` to ``hi``) ``native``'s elements lie in; ``None`` for
    memory that is not a GPU's CuPy array or torch tensor."""
    library = library_of(type(native))
    try:
        if library == "cupy":
            ptr, strides, itemsize = native.data.ptr, native.strides, native.itemsize
        elif library == "torch" and native.device.type != "cpu":
            itemsize = native.element_size()
            ptr, strides = native.data_ptr(), [s * itemsize for s in native.stride()]
        else:
            return None
    except (AttributeError, RuntimeError):  # no strided memory (a sparse tensor): never kept
        return None
    lo = hi = ptr
    for n, stride in zip(native.shape, strides, strict=True):
        if n == 0:
            return device_of(native), ptr, ptr  # no element: overlaps nothing
        if stride < 0:
            lo += (n - 1) * stride
        else:
            hi += (n - 1) * stride
    return device_of(native), lo, hi + itemsize


def _overlaps(a: tuple[Device, int, int], b: tuple[Device, int, int]) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def _escaped_overlap(span: tuple[Device, int, int]) -> bool:
    return any(_overlaps(span, other) for other in _escaped_spans.values())


def _wrote_device(native: Any) -> None:
    span = _span(native)
    if span is None and not readable(native):
        return  # not device memory
    for key, mirror in list(_host_mirrors.items()):
        if span is None or _overlaps(span, (mirror.device, mirror.lo, mirror.hi)):  # (no span: all of them)
            _drop_host(key)
            _counts["host_invalidated"] += 1
    for key, entry in list(_view_reads.items()):
        if span is None or _overlaps(span, entry[1]):
            del _view_reads[key]  # its views' reads count again from the write


def _escape_device(native: Any) -> None:
    span = _span(native)
    if span is None or span[1] == span[2] or id(native) in _escaped_spans:
        return
    key = id(native)
    _escaped_spans[key] = span
    weakref.finalize(native, _escaped_spans.pop, key, None)
    _counts["escaped"] += 1
    _wrote_device(native)


def _drop_host(key: int) -> None:
    _host_mirrors.pop(key, None)


def _forget_native(key: int, ref: Any) -> None:
    mirror = _host_mirrors.get(key)
    if mirror is not None and mirror.native is ref:  # the device array is gone, and its copy with it
        del _host_mirrors[key]


def _fit_host() -> None:
    over = sum(m.nbytes for m in _host_mirrors.values()) - _host_budget
    if over > 0:
        evict(HOST, over)


# ---- both directions --------------------------------------------------------------------------------


def wrote(data: Any) -> None:
    """Memory is about to be written (through ``data``, any array or view of it, on the host or a
    device): its copies go."""
    if type(data) is np.ndarray:
        if not _versions:
            return
        state = _versions.get(id(_owner(data)))
        if state is not None:
            state[0] += 1
            _drop_owner(id(_owner(data)), "invalidated")
    elif _host_mirrors or _view_reads:
        _wrote_device(data)


def escape(data: Any) -> None:
    """``data``'s memory may be written where dispatch does not see it (handed out, or the
    caller's array wrapped as it is): drop its copies, and never mirror it again."""
    if type(data) is not np.ndarray:
        if not isinstance(data, np.ndarray) or library_of(type(data)):  # (a CuPy array may subclass NumPy's)
            _escape_device(data)
        return
    owner = _owner(data)
    if owner.nbytes < MIN_BYTES:
        return
    oid = id(owner)
    known = _escaped.get(oid)
    if known is not None and known() is owner:
        return
    _escaped[oid] = weakref.ref(owner, lambda _, oid=oid: _escaped.pop(oid, None))
    _counts["escaped"] += 1
    if oid in _versions:
        _versions[oid][0] += 1
        _drop_owner(oid, "invalidated")


def valid_on(array: Any, place: Any) -> bool:
    """Whether ``array`` (a ``dispatch.ndarray`` or a native array) can be read on ``place`` with
    no copy: its data is there, or a valid mirror of it is kept there.

    ``place`` is a target (or a target's name): the copy that target itself reads; or a device
    (or its name, ``"cpu"``, ``"cuda:0"``): a copy any target there reads. Looks, never copies
    nor counts; a few dictionary reads, for the router to charge no copy for such an input.
    """
    data = box.native(array)
    if isinstance(place, str):
        place = targets.probe(place) if place in targets.names() else parse_device(place)
        if place is None:
            return False  # a target this machine lacks
    device, name = (place, None) if isinstance(place, Device) else (place.device, place.name)
    if type(data) is np.ndarray:
        if device.is_host:
            return True
        if not _mirrors:
            return False
        owner = _owner(data)
        for (key, tname), m in _mirrors.items():
            if m.device != device or (name is not None and tname != name):
                continue
            if key == id(data) and _valid(m, data):
                return True
            if key == id(owner) and _serves_slice(m, data, owner):
                return True
        return False
    held = device_of(data)
    if held == device:
        return True  # engines on one device share memory (DLPack)
    return device.is_host and _host_valid(data)


def evict(device: Any = None, nbytes: int | None = None) -> int:
    """Drop mirrors, least recently used first: those on ``device`` (the host's copies of device
    data where it is the host; every place's where ``None``), until ``nbytes`` are freed (all of
    them where ``None``). The bytes freed."""
    freed = 0
    if device is None or device.is_host:
        for key, mirror in list(_host_mirrors.items()):
            if nbytes is not None and freed >= nbytes:
                return freed
            freed += mirror.nbytes
            _drop_host(key)
            _counts["host_evicted"] += 1
    for key, mirror in list(_mirrors.items()):
        if nbytes is not None and freed >= nbytes:
            break
        if device is None or mirror.device == device:
            freed += mirror.nbytes
            _drop(key)
            _counts["evicted"] += 1
    return freed


def budget() -> int:
    """The bytes of mirrors one device keeps."""
    return _budget


def set_budget(nbytes: int) -> None:
    """Keep at most ``nbytes`` of mirrors per device (least recently used dropped first)."""
    global _budget
    _budget = _bytes(nbytes)
    for device in {m.device for m in _mirrors.values()}:
        _fit(device)


def host_budget() -> int:
    """The bytes of device data's copies the host keeps."""
    return _host_budget


def set_host_budget(nbytes: int) -> None:
    """Keep at most ``nbytes`` of device data's copies on the host (least recently used dropped first)."""
    global _host_budget
    _host_budget = _bytes(nbytes)
    _fit_host()


def _bytes(nbytes: int) -> int:
    if nbytes < 0:
        raise ValueError(f"a mirror budget is a number of bytes >= 0, not {nbytes}")
    return int(nbytes)


def kept(device: Any = None) -> int:
    """Bytes of mirrors kept (on ``device``: the host's copies of device data where it is the host)."""
    on_devices = sum(m.nbytes for m in _mirrors.values() if device is None or m.device == device)
    if device is None or device.is_host:
        on_devices += sum(m.nbytes for m in _host_mirrors.values())
    return on_devices


def served() -> int:
    """Bytes read from kept copies since the process started, both ways (what a trace charges a call)."""
    return _counts["hit_bytes"] + _counts["host_hit_bytes"]


def stats() -> dict[str, int]:
    """Counts since the process started, and what is kept now.

    To devices: ``hits`` (reads served by a kept copy), ``hit_bytes`` (the bytes they did not
    send), ``kept`` (copies made and kept), ``invalidated``, ``evicted``, ``escaped`` (memory
    that became the caller's, on either side), ``slices`` (slices read from their memory's copy:
    ``through_owner``); ``bytes`` and ``mirrors`` kept now. To the host,
    the same with ``host_``: ``host_hits``, ``host_hit_bytes``, ``host_misses`` (large device data
    copied back), ``host_kept``, ``host_invalidated``, ``host_evicted``, ``host_claimed`` (taken
    over by a result that views them), ``host_bytes`` and ``host_mirrors``.
    """
    return {**_counts, "bytes": sum(m.nbytes for m in _mirrors.values()), "mirrors": len(_mirrors),
            "host_bytes": sum(m.nbytes for m in _host_mirrors.values()), "host_mirrors": len(_host_mirrors)}


def clear() -> None:
    """Drop every mirror (and forget which memory was handed out)."""
    _mirrors.clear()
    _versions.clear()
    _escaped.clear()
    _host_mirrors.clear()
    _view_reads.clear()
    _element_reads.clear()
    _parents.clear()
    _escaped_spans.clear()
    _live()


def _fit(device: Any) -> None:
    over = sum(m.nbytes for m in _mirrors.values() if m.device == device) - _budget
    if over > 0:
        evict(device, over)


def _drop(key: tuple[int, str]) -> None:
    _mirrors.pop(key, None)  # (the owner's counter stays while it lives: a later copy starts from it)
    if not _mirrors:
        _live()


def _drop_owner(oid: int, why: str | None) -> None:
    for key, mirror in list(_mirrors.items()):
        if mirror.owner == oid:
            _mirrors.pop(key)
            if why is not None:
                _counts[why] += 1
    if not _mirrors:
        _live()


def _forget_owner(oid: int) -> None:
    _versions.pop(oid, None)
    _drop_owner(oid, None)  # the host memory is gone, and its copies with it


box.register_copies(valid_on)
_live()  # the compiled path learns MIN_BYTES at import
