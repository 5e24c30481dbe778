"""Small views of large device data read on the host (``dispatch.arrays.mirrors``): a row read in
a loop (``x[t]``) is served from its base's host copy, made once such reads since the base was
last written have cost about the copy; every write to the base, through any path or view, drops the copy and
counts the reads again; the values, dtype, shape and strides are the view's own.

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``), whose "device" memory is NumPy's:
a stale copy would read a wrong value, which each test compares with NumPy's.
"""

from __future__ import annotations

import fakecupy
import numpy
import pytest
from helpers import fake_cupy_router
from mirror_writes import _copyto, _fill, _iadd, _out, _setitem, _setitem_slice, _view_setitem

import dispatch
from dispatch.arrays import mirrors
from dispatch.arrays._array import held
from dispatch.base.devices import HOST
from dispatch.targets import _staging

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)

ROWS, COLS = 8192, 32  # 2 MiB of float64: over mirrors.MIN_BYTES; a row is 256 bytes
HOME_VIEWS, READ_BYTES = mirrors.HOME_VIEWS, mirrors.READ_BYTES


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch, operator_path):
    monkeypatch.setattr(mirrors, "HOME_VIEWS", 1 << 40)  # (the data stays on the device but where a test moves it)
    monkeypatch.setattr(mirrors, "READ_BYTES", ROWS * COLS * 8 // 2)  # (the base copied at the second read)
    with fake_cupy_router(tmp_path, monkeypatch):
        mirrors.clear()
        yield
        mirrors.clear()


def _copied_back() -> int:
    return _staging.moved()["to_host"]


def _fresh(shape=(ROWS, COLS), dtype=numpy.float64) -> tuple:
    ref = numpy.arange(numpy.prod(shape), dtype=dtype).reshape(shape)
    x = dispatch.array(ref).to("cupy")
    assert x.device != HOST
    return x, ref


def _host_read(v) -> numpy.ndarray:
    """``v * 1`` run by NumPy on the host (the device view read there)."""
    with dispatch.using("numpy"):
        y = dispatch.multiply(v, 1)
    assert y.device == HOST
    return numpy.asarray(y)


def _row(x, t):
    v = x[t]
    assert v.device != HOST  # a view on the device, as before
    return v


def _equal(got, want) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_array_equal(got, want)


def test_the_base_is_copied_once_the_reads_have_cost_as_much(monkeypatch):
    monkeypatch.setattr(mirrors, "READ_BYTES", READ_BYTES)
    x, ref = _fresh()
    reads = x.nbytes // READ_BYTES
    assert reads > 2
    before = _copied_back()
    for t in range(reads - 1):
        _equal(_host_read(_row(x, t)), ref[t])
    assert _copied_back() - before == (reads - 1) * ref[0].nbytes  # each row crossed alone
    for t in range(reads - 1, 300):
        _equal(_host_read(_row(x, t)), ref[t])
    assert _copied_back() - before == (reads - 1) * ref[0].nbytes + x.nbytes


def test_a_loop_that_writes_between_a_few_reads_never_copies_the_base(monkeypatch):
    monkeypatch.setattr(mirrors, "READ_BYTES", READ_BYTES)
    x, ref = _fresh()
    before = _copied_back()
    for t in range(40):  # two small reads a step, and a write: whole copies would cost 2 MiB a step
        _equal(_host_read(_row(x, t)), ref[t])
        _equal(_host_read(x[-1, :4]), ref[-1, :4])
        with dispatch.using("cupy"):
            x[t] += 1.0
        ref[t] += 1.0
    assert _copied_back() - before == 40 * (ref[0].nbytes + ref[-1, :4].nbytes)
    assert mirrors.stats()["host_mirrors"] == 0


def test_rows_read_in_a_loop_copy_the_base_back_once():
    x, ref = _fresh()
    before = _copied_back()
    _equal(_host_read(_row(x, 0)), ref[0])
    assert _copied_back() - before == ref[0].nbytes  # one read alone: only the row crosses
    _equal(_host_read(_row(x, 1)), ref[1])  # the second: the base crosses, and is kept
    assert _copied_back() - before == ref[0].nbytes + x.nbytes
    for t in range(2, 200):
        _equal(_host_read(_row(x, t)), ref[t])
    assert _copied_back() - before == ref[0].nbytes + x.nbytes  # every later row from the copy
    assert mirrors.stats()["host_mirrors"] == 1


def test_a_row_served_from_the_copy_is_read_only_and_the_views_own():
    x, ref = _fresh()
    for t in (0, 1):
        served = mirrors.read(_row(x, t)._engine_array)
    assert not served.flags.writeable
    _equal(served, ref[1])
    with pytest.raises(ValueError, match="read-only"):
        served[0] = 1.0
    handed = numpy.asarray(_row(x, 7))  # the caller's own copy, from the kept one
    assert handed.flags.writeable
    handed[0] = -1.0
    _equal(_host_read(_row(x, 7)), ref[7])


@pytest.mark.parametrize("key", [(slice(None), 3), (slice(5, 900, 7), slice(None, None, -2)), 4000,
                                 (slice(None, None, -1), 0), (Ellipsis, slice(10, 12))],
                         ids=["column", "strided", "row", "reversed", "ellipsis"])
def test_strided_and_reversed_views_read_their_own_elements(key):
    x, ref = _fresh()
    x.T.copy()  # (nothing kept for another array)
    for _ in range(3):
        v = x[key]
        if v.nbytes >= mirrors.MIN_BYTES:
            pytest.skip("not a small view")
        _equal(_host_read(v), ref[key])


def test_a_transposed_base_and_other_dtypes():
    for dtype in (numpy.float32, numpy.int64, numpy.complex128):
        x, ref = _fresh((COLS, ROWS * 2), dtype)
        xt, reft = x.T, ref.T  # a view (F-ordered) of the base
        for t in range(4):
            _equal(_host_read(xt[t]), reft[t])
            _equal(_host_read(x[t, 5:90]), ref[t, 5:90])
        mirrors.clear()


def _view_iadd_row(x, ref):
    v = x[3]
    v += 2.0
    ref[3] += 2.0


def _write_back(x, ref):
    x[1:3] = x[5:7] * 2.0
    ref[1:3] = ref[5:7] * 2.0


@pytest.mark.parametrize("write", [_setitem, _setitem_slice, _iadd, _out, _fill, _copyto, _view_setitem,
                                   _view_iadd_row, _write_back], ids=lambda w: w.__name__.lstrip("_"))
def test_every_write_to_the_base_drops_the_copy(write):
    x, ref = _fresh()
    for t in range(4):
        _host_read(_row(x, t))
    assert mirrors.stats()["host_mirrors"] == 1
    flat = write in (_setitem, _setitem_slice, _view_setitem, _copyto)  # (written as 1-d arrays of N)
    with dispatch.using("cupy"):
        write(x.reshape(-1) if flat else x, ref.reshape(-1) if flat else ref)
    assert x.device != HOST
    for t in range(12):  # no stale row read, before the copy is made again and after
        _equal(_host_read(_row(x, t)), ref[t])


def test_a_write_between_reads_counts_them_again():
    x, ref = _fresh()
    before = _copied_back()
    for t in range(50):  # a loop that writes the base at each step and reads one row of it
        _equal(_host_read(_row(x, t)), ref[t])
        with dispatch.using("cupy"):
            x[t + 1] = 1.0 * t
        ref[t + 1] = 1.0 * t
    assert _copied_back() - before == 50 * ref[0].nbytes  # never the whole base
    assert mirrors.stats()["host_mirrors"] == 0


def test_small_bases_are_never_copied_whole():
    x, ref = _fresh((64, COLS))
    before = _copied_back()
    for t in range(10):
        _equal(_host_read(_row(x, t)), ref[t])
    assert _copied_back() - before == 10 * ref[0].nbytes


def test_the_price_of_a_row_on_the_host_knows_the_copy():
    x, _ = _fresh()
    row = _row(x, 0)
    assert not mirrors.valid(row._engine_array, "numpy") and not dispatch.base.box.valid_on(row, HOST)
    _host_read(row)
    _host_read(_row(x, 1))
    row = _row(x, 2)
    assert mirrors.valid(row._engine_array, "numpy") and dispatch.base.box.valid_on(row, HOST)
    with dispatch.using("cupy"):
        x += 1.0
    assert not mirrors.valid(row._engine_array, "numpy")


def test_a_row_by_an_integer_is_a_view_on_the_device():
    x, ref = _fresh()
    row = x[5]
    assert row.device != HOST and row.shape == ref[5].shape and row.dtype == ref.dtype
    with dispatch.using("cupy"):
        row[2] = -1.0  # written through the view: the base sees it
    ref[5, 2] = -1.0
    _equal(numpy.asarray(x), ref)
    _equal(numpy.asarray(x[-3]), ref[-3])
    got = x[5, 2]  # every axis an integer: NumPy's scalar, as before
    assert got == ref[5, 2] and numpy.ndim(got) == 0
    with pytest.raises(IndexError):
        x[ROWS]


def _loop(x, steps, hold=None):
    """``y[t] = 0.5 * x[t]`` for the first ``steps`` rows, read on the host; ``hold``: a list that
    keeps every row (views of ``x`` alive)."""
    y = dispatch.zeros((steps, COLS))
    for t in range(steps):
        row = x[t]
        with dispatch.using("numpy"):
            y[t] = 0.5 * row
        if hold is not None:
            hold.append(row)
        del row
    return y


def test_rows_read_on_the_host_in_a_loop_make_the_host_its_home(monkeypatch):
    monkeypatch.setattr(mirrors, "HOME_VIEWS", HOME_VIEWS)
    x, ref = _fresh()
    y = _loop(x, 3 * HOME_VIEWS)
    _equal(numpy.asarray(y), 0.5 * ref[: 3 * HOME_VIEWS])
    assert x.device == HOST  # moved: its rows are read by the host fast path from now on
    # the device data kept as its copy
    assert mirrors.stats()["host_mirrors"] == 0 and mirrors.valid(x._engine_array, "cupy")
    before = _staging.moved()["to_device"]
    with dispatch.using("cupy"):
        total = float((x * 2.0).sum())  # read on the device from the kept copy
    assert total == (ref * 2.0).sum() and _staging.moved()["to_device"] == before
    x[7] = -3.0  # a host write: the device copy goes
    ref[7] = -3.0
    assert not mirrors.valid(x._engine_array, "cupy")
    with dispatch.using("cupy"):
        _equal(numpy.asarray(x * 2.0), ref * 2.0)
    _equal(numpy.asarray(x), ref)


def test_once_home_the_loops_host_calls_keep_the_compiled_path(monkeypatch, operator_path):
    """Moved home, the array's device data is kept as its copy, so a mirror is kept; the loop's
    host calls that write no memory with copies (an assignment into another array, a ufunc on
    NumPy's scalar, a product) still take the compiled path, as in a program with no device (an
    AR(1) loop over a draw's rows took three times NumPy's time while each of them went to Python)."""
    if operator_path != "compiled":
        pytest.skip("what the compiled path takes")
    monkeypatch.setattr(mirrors, "HOME_VIEWS", HOME_VIEWS)
    x, ref = _fresh()
    _loop(x, 3 * HOME_VIEWS)
    assert x.device == HOST and mirrors.kept() > 0
    python = []

    def counted(name, original):
        def entered(*args, **kwargs):
            python.append((name, getattr(args[0], "name", type(args[0]).__name__)))
            return original(*args, **kwargs)
        return entered

    for module, name in ((dispatch.arrays._call, "call"), (mirrors, "wrote")):  # the Python path's ways in
        monkeypatch.setattr(module, name, counted(name, getattr(module, name)))
    y, expected = dispatch.zeros((64, COLS)), numpy.zeros((64, COLS))
    for t in range(1, 64):
        if t == 8:
            python.clear()  # (a kind's first call here may take the Python path, once)
        y[t] = 0.9 * y[t - 1] + dispatch.sqrt(1 - 0.9**2) * x[t]
        expected[t] = 0.9 * expected[t - 1] + numpy.sqrt(1 - 0.9**2) * ref[t]
    assert python == [], python
    _equal(numpy.asarray(y), expected)


def test_a_trace_changes_nothing_rows_read_in_a_traced_loop_make_the_host_its_home(monkeypatch):
    monkeypatch.setattr(mirrors, "HOME_VIEWS", HOME_VIEWS)
    x, ref = _fresh()
    with dispatch.trace() as t:
        y = _loop(x, 3 * HOME_VIEWS)
    _equal(numpy.asarray(y), 0.5 * ref[: 3 * HOME_VIEWS])
    assert x.device == HOST
    assert [r.target for r in t.records if r.op == "__getitem__"][-1] == "numpy"  # recorded where they ran


def test_a_device_array_with_a_view_alive_stays_on_the_device(monkeypatch):
    monkeypatch.setattr(mirrors, "HOME_VIEWS", HOME_VIEWS)
    x, ref = _fresh()
    rows = []
    _loop(x, 3 * HOME_VIEWS, hold=rows)
    assert x.device != HOST
    with dispatch.using("cupy"):
        rows[4][1] = 99.0  # a view written on the device: its base sees it
    ref[4, 1] = 99.0
    _equal(numpy.asarray(x), ref)


def _reshaped(flat):
    """``flat``'s device memory as rows: a CuPy view whose ``base`` is its owner, as a draw gives."""
    view = flat._engine_array.reshape(ROWS, COLS)
    assert type(view.base) is type(view) and view.base is flat._engine_array
    return held(view)


def test_a_draw_reshaped_from_flat_memory_moves_home_too(monkeypatch):
    monkeypatch.setattr(mirrors, "HOME_VIEWS", HOME_VIEWS)
    flat = numpy.arange(ROWS * COLS, dtype=numpy.float64)
    x = _reshaped(dispatch.array(flat).to("cupy"))
    ref = flat.reshape(ROWS, COLS)
    _equal(numpy.asarray(_loop(x, 3 * HOME_VIEWS)), 0.5 * ref[: 3 * HOME_VIEWS])
    assert x.device == HOST
    _equal(numpy.asarray(x), ref)


def test_a_draw_reshaped_from_flat_memory_read_in_a_traced_loop_moves_home_too(monkeypatch):
    """Traced, each row is indexed on the routed path: linked to the array indexed as the fast
    path links it (``mirrors.viewed``), not to the memory's owner its ``base`` names."""
    monkeypatch.setattr(mirrors, "HOME_VIEWS", HOME_VIEWS)
    flat = numpy.arange(ROWS * COLS, dtype=numpy.float64)
    x = _reshaped(dispatch.array(flat).to("cupy"))
    ref = flat.reshape(ROWS, COLS)
    with dispatch.trace():
        _equal(numpy.asarray(_loop(x, 3 * HOME_VIEWS)), 0.5 * ref[: 3 * HOME_VIEWS])
    assert x.device == HOST
    _equal(numpy.asarray(x), ref)


def test_a_reshaped_draw_with_another_view_of_its_memory_alive_stays(monkeypatch):
    monkeypatch.setattr(mirrors, "HOME_VIEWS", HOME_VIEWS)
    flat = dispatch.array(numpy.arange(ROWS * COLS, dtype=numpy.float64)).to("cupy")
    x = _reshaped(flat)  # flat, still held, is another name for the same memory
    ref = numpy.arange(ROWS * COLS, dtype=numpy.float64).reshape(ROWS, COLS)
    _loop(x, 3 * HOME_VIEWS)
    assert x.device != HOST
    with dispatch.using("cupy"):
        flat[33] = -5.0  # written through the other name: x sees it
    ref.reshape(-1)[33] = -5.0
    _equal(numpy.asarray(x), ref)


def test_a_large_device_arrays_own_host_copy_is_priced_as_a_copy():
    x, _ = _fresh()
    _host_read(x)  # copied back whole, and kept
    assert mirrors.valid_on(x, HOST)  # read there without a copy...
    assert not mirrors.valid(x._engine_array, "numpy")  # ...but priced as one: a plan made now outlives the copy


def test_an_array_moving_home_at_an_index_by_a_device_mask(monkeypatch):
    monkeypatch.setattr(mirrors, "HOME_VIEWS", HOME_VIEWS)
    x, ref = _fresh()
    _loop(x, HOME_VIEWS + 1)  # the copy made at the second row, which it serves: the next index moves it
    assert x.device != HOST
    mask = dispatch.array(ref[:, 0] > 100.0).to("cupy")
    got = x[mask]  # the read that moves it: a device mask, indexed as NumPy indexes
    _equal(numpy.asarray(got), ref[ref[:, 0] > 100.0])
    assert x.device == HOST
