"""Creation functions and random draws made chunk by chunk in Dask: equal to NumPy's arrays and
NumPy's random streams (which distributions, and why the rest stay on the host), and an array
larger than the host made without ever existing whole.

These run on Dask's threaded scheduler in this process (no cluster): the chunking is the same.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask.array")

import dispatch
from dispatch import cluster
from dispatch.base.devices import DASK
from dispatch.targets import _dask_create

CHUNK = 2048  # bytes: 256 float64 per chunk, so small draws span many chunks


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(cluster, "_client", None)
    monkeypatch.delenv("DISPATCH_DASK_SCHEDULER", raising=False)
    cluster.set_chunk_bytes(CHUNK)
    yield
    cluster.set_chunk_bytes(None)


def _same(got, want) -> None:
    assert isinstance(got, dispatch.ndarray) and got.device == DASK
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


# ---- random streams ---------------------------------------------------------------------------------------

BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")

# distribution -> scalar parameters (every name in _dask_create.CHAINED["generator"] is here)
GENERATOR = {
    "random": {}, "standard_normal": {}, "normal": {"loc": 1.0, "scale": 2.0}, "uniform": {"low": -1.0, "high": 3.0},
    "integers": {"low": 0, "high": 1000}, "exponential": {"scale": 2.0}, "standard_exponential": {},
    "gamma": {"shape": 0.7, "scale": 2.0}, "standard_gamma": {"shape": 2.5}, "beta": {"a": 0.5, "b": 0.7},
    "poisson": {"lam": 30.0}, "binomial": {"n": 1000, "p": 0.4}, "lognormal": {}, "laplace": {}, "logistic": {},
    "gumbel": {}, "chisquare": {"df": 3.0}, "standard_t": {"df": 5.0}, "standard_cauchy": {}, "pareto": {"a": 3.0},
    "weibull": {"a": 2.0}, "power": {"a": 2.0}, "rayleigh": {}, "geometric": {"p": 0.2},
    "negative_binomial": {"n": 5, "p": 0.3}, "hypergeometric": {"ngood": 10, "nbad": 20, "nsample": 5},
    "logseries": {"p": 0.5}, "zipf": {"a": 2.0}, "wald": {"mean": 1.0, "scale": 2.0},
    "vonmises": {"mu": 0.0, "kappa": 2.0}, "triangular": {"left": 0.0, "mode": 1.0, "right": 3.0},
    "f": {"dfnum": 3.0, "dfden": 5.0}, "noncentral_chisquare": {"df": 3.0, "nonc": 1.0},
    "noncentral_f": {"dfnum": 3.0, "dfden": 5.0, "nonc": 1.0},
}
# dtype variants that chain exactly too (32-bit draws: the generator keeps the spare half in its state)
DTYPES = {"random": np.float32, "standard_normal": np.float32, "standard_exponential": np.float32,
          "standard_gamma": np.float32, "integers": np.int32}


def test_every_chained_distribution_is_tested():
    assert set(GENERATOR) == _dask_create.CHAINED["generator"]


@pytest.mark.parametrize("method", sorted(GENERATOR))
def test_generator_draws_equal_numpys_stream(method):
    """A draw of 3000 values in chunks of 256 (with a 2-D shape: chunks of whole rows), then the
    next draw on the host: both equal NumPy's, on every bit generator."""
    params = GENERATOR[method]
    variants = [params] + ([{**params, "dtype": DTYPES[method]}] if method in DTYPES else [])
    for bit_generator in BIT_GENERATORS:
        for kwargs in variants:
            ref = np.random.Generator(getattr(np.random, bit_generator)(12345))
            rng = dispatch.random.Generator(getattr(np.random, bit_generator)(12345))
            with dispatch.using("dask"):
                got = getattr(rng, method)(size=(60, 50), **kwargs)
            assert got._engine_array.numblocks[0] > 4
            _same(got, getattr(ref, method)(size=(60, 50), **kwargs))
            np.testing.assert_array_equal(np.asarray(getattr(rng, method)(size=7, **kwargs)),
                                          getattr(ref, method)(size=7, **kwargs))


def test_chained_draws_continue_from_the_pending_state():
    """Two chunked draws in a row chain without computing anything; the generator's state is
    computed when it is next used on the host."""
    ref, rng = np.random.default_rng(5), dispatch.random.default_rng(5)
    with dispatch.using("dask"):
        a = rng.standard_normal(1000)
        assert rng._pending is not None
        b = rng.normal(3.0, 0.5, size=(20, 30))
    assert rng._pending is not None
    c = rng.integers(0, 10, size=5)  # on the host: the pending state is computed first
    assert rng._pending is None
    _same(a, ref.standard_normal(1000))
    _same(b, ref.normal(3.0, 0.5, size=(20, 30)))
    np.testing.assert_array_equal(np.asarray(c), ref.integers(0, 10, size=5))
    assert rng.bit_generator.state == ref.bit_generator.state


def test_float64_uniform_draws_jump_instead_of_chaining():
    """random() and uniform() take one 64-bit draw per value: on PCG64 each chunk starts from
    ``advance(state, offset)``, so chunks are independent and the next state is known at once."""
    ref, rng = np.random.default_rng(9), dispatch.random.default_rng(9)
    ref.integers(0, 2**31, size=3, dtype=np.uint32)  # leaves half a 64-bit draw cached in the state
    rng.integers(0, 2**31, size=3, dtype=np.uint32)
    with dispatch.using("dask"):
        x = rng.random((40, 50))
        y = rng.uniform(-2.0, 5.0, size=3001)
    assert rng._pending is None
    graph = dict(x._engine_array.__dask_graph__())
    assert len(graph) == x._engine_array.npartitions  # one task per chunk: no chain of states
    _same(x, ref.random((40, 50)))
    _same(y, ref.uniform(-2.0, 5.0, size=3001))
    assert rng.bit_generator.state == ref.bit_generator.state
    np.testing.assert_array_equal(np.asarray(rng.integers(0, 2**31, size=9, dtype=np.uint32)),
                                  ref.integers(0, 2**31, size=9, dtype=np.uint32))


LEGACY = {
    "random_sample": ((), {}), "random": ((), {}), "standard_normal": ((), {}), "normal": ((1.0, 2.0), {}),
    "uniform": ((-1.0, 3.0), {}), "randint": ((0, 1000), {}), "exponential": ((2.0,), {}), "gamma": ((0.7,), {}),
    "poisson": ((3.0,), {}), "binomial": ((10, 0.3), {}), "beta": ((0.5, 0.7), {}), "standard_t": ((5.0,), {}),
    "hypergeometric": ((10, 20, 5), {}), "zipf": ((2.0,), {}), "vonmises": ((0.0, 2.0), {}),
}


@pytest.mark.parametrize("method", sorted(LEGACY))
def test_global_stream_draws_equal_numpys(method):
    """Module-level functions draw from NumPy's global RandomState, shared with NumPy: a chunked
    draw leaves it exactly where NumPy's one draw would (computed at once)."""
    args, kwargs = LEGACY[method]
    np.random.seed(77)
    with dispatch.using("dask"):
        got = getattr(dispatch.random, method)(*args, size=(30, 40), **kwargs)
    after = np.random.standard_normal(3)  # NumPy itself reads the global state next
    np.random.seed(77)
    _same(got, getattr(np.random, method)(*args, size=(30, 40), **kwargs))
    np.testing.assert_array_equal(after, np.random.standard_normal(3))


def test_legacy_rand_randn_and_randomstate_proxies():
    np.random.seed(3)
    with dispatch.using("dask"):
        a, b = dispatch.random.rand(50, 40), dispatch.random.randn(2000)
    np.random.seed(3)
    _same(a, np.random.rand(50, 40))
    _same(b, np.random.randn(2000))
    ref, rs = np.random.RandomState(8), dispatch.random.RandomState(8)
    with dispatch.using("dask"):
        c = rs.standard_normal(999)  # Box-Muller: the spare Gaussian travels in the state
    _same(c, ref.standard_normal(999))
    assert rs._pending is not None
    np.testing.assert_array_equal(np.asarray(rs.standard_normal(5)), ref.standard_normal(5))


def test_a_randomstate_a_library_holds_too_leaves_nothing_pending():
    """Once a library holds the NumPy RandomState inside dispatch's (scikit-learn's
    ``check_random_state`` under ``dispatch run``) it draws from it directly: a chunked draw of
    dispatch's computes the next state at once, and the library's next draw is NumPy's next."""
    ref, rs = np.random.RandomState(8), dispatch.random.RandomState(8)
    held = dispatch.random._numpys(rs)
    assert held is rs._numpy
    with dispatch.using("dask"):
        c = rs.standard_normal(999)
    assert rs._pending is None
    _same(c, ref.standard_normal(999))
    np.testing.assert_array_equal(held.standard_normal(5), ref.standard_normal(5))
    np.testing.assert_array_equal(np.asarray(rs.standard_normal(5)), ref.standard_normal(5))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.bool_])
def test_small_integer_draws_stay_on_the_host(dtype):
    """NumPy buffers 8- and 16-bit draws within one call: chunks would differ, so these draws
    are made whole on the host (then moved into Dask, as ``using("dask")`` asks) and equal NumPy's."""
    ref, rng = np.random.default_rng(4), dispatch.random.default_rng(4)
    high = 2 if dtype is np.bool_ else 100
    with dispatch.using("dask"):
        got = rng.integers(0, high, size=5000, dtype=dtype)
    assert got._engine_array.name.startswith("from-host")  # drawn whole, not chunk by chunk
    np.testing.assert_array_equal(np.asarray(got), ref.integers(0, high, size=5000, dtype=dtype))


def test_array_parameters_stay_on_the_host():
    ref, rng = np.random.default_rng(2), dispatch.random.default_rng(2)
    loc = np.linspace(0, 1, 3000)
    with dispatch.using("dask"):
        got = rng.normal(loc, 1.0)
    assert got._engine_array.name.startswith("from-host")
    np.testing.assert_array_equal(np.asarray(got), ref.normal(loc, 1.0))


def test_invalid_parameters_raise_as_numpy():
    rng = dispatch.random.default_rng(0)
    with dispatch.using("dask"), pytest.raises(ValueError, match="scale"):
        rng.normal(0.0, -1.0, size=5000)


# ---- creation -------------------------------------------------------------------------------------------

CREATION = [
    ("zeros", ((40, 30),), {}), ("zeros", (5000,), {"dtype": np.int32}), ("ones", ((7, 300),), {}),
    ("full", ((40, 30), 3), {}), ("full", ((40, 30), 2.5), {"dtype": np.float32}), ("full", (999, True), {}),
    ("eye", (70,), {}), ("eye", (50, 80, 3), {}), ("eye", (60,), {"k": -2, "dtype": np.int64}), ("identity", (45,), {}),
    ("arange", (5000,), {}), ("arange", (1e4,), {}), ("arange", (0.5, 1000.3, 0.37), {}), ("arange", (3, 50000, 7), {}),
    ("arange", (-3, 7, 1e-3), {}), ("arange", (100, -100, -0.07), {}), ("arange", (0.1, 400.0, 0.1), {}),
    ("arange", (2.5, 3000, 1.5), {"dtype": np.int64}), ("arange", (0, 100, 0.01), {"dtype": np.float32}),
    ("arange", (np.float32(0.5), np.float32(300.0), np.float32(0.3)), {}),
    ("arange", (10, 0, -1), {"dtype": np.uint16}),
    ("linspace", (0, 1, 10001), {}), ("linspace", (0.3, 1e5, 100001), {}), ("linspace", (-2.5, 3.7, 12345, False), {}),
    ("linspace", (1e-300, 1e-298, 3000), {}), ("linspace", (0, 1000, 4000), {"dtype": np.int64}),
    ("linspace", (np.float32(-1), np.float32(1), 3333), {}), ("linspace", (5, 5, 2000), {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), CREATION, ids=[f"{n}{a}{k or ''}" for n, a, k in CREATION])
def test_creation_equals_numpy(name, args, kwargs):
    with dispatch.using("dask"):
        got = getattr(dispatch, name)(*args, **kwargs)
    _same(got, getattr(np, name)(*args, **kwargs))


def test_linspace_retstep_and_tiny_sizes():
    for num in (0, 1, 2, 3):
        with dispatch.using("dask"):
            got = dispatch.linspace(0.0, 2.0, num)
        np.testing.assert_array_equal(np.asarray(got), np.linspace(0.0, 2.0, num))
    with dispatch.using("dask"):
        got, step = dispatch.linspace(1.0, 9.0, 3000, retstep=True)
    want, want_step = np.linspace(1.0, 9.0, 3000, retstep=True)
    _same(got, want)
    assert step == want_step


def test_arange_length_matches_numpy():
    cases = [(0, 10, 3), (0.0, 1.0, 0.1), (1, 2, 0.3), (10, 1, -2), (0, 1e5, 0.7), (-1.5, 1.5, 0.25), (5, 5, 1)]
    for args in cases:
        assert cluster.created_elements("arange", args, {}) == np.arange(*args).size, args


# ---- larger than the host -------------------------------------------------------------------------------


def test_an_array_larger_than_the_host_is_made_on_a_cluster_that_holds_it(monkeypatch):
    """With 1 GiB free (as far as dispatch knows) and a cluster of 16 TiB connected, an 8 TiB
    ``zeros`` and a 32 GiB draw go to Dask without being asked; nothing is made whole, printing
    and indexing read corners."""
    cluster.set_chunk_bytes(32 << 20)
    monkeypatch.setattr(cluster, "host_free_bytes", lambda: 1 << 30)
    monkeypatch.setattr(cluster, "connected", lambda: True)
    monkeypatch.setattr(cluster, "capacity_bytes", lambda: 16 << 40)
    x = dispatch.zeros((2**20, 2**20))  # 8 TiB
    assert x.device == DASK and x.nbytes == 8 << 40
    with np.printoptions(threshold=1000):
        assert repr(x) == repr(np.broadcast_to(np.zeros(()), (2**20, 2**20)))
    assert float(x[123_456, 7:9].sum()) == 0.0
    rng, ref = dispatch.random.default_rng(11), np.random.default_rng(11)
    y = rng.random((2**16, 2**16))  # 32 GiB: jumped chunks, independent
    assert y.device == DASK
    np.testing.assert_array_equal(np.asarray(y[0, :5]), ref.random(5))
    last = np.random.PCG64(0)
    last.state = _dask_create.advanced(np.random.default_rng(11).bit_generator.state, 2**32 - 3)
    np.testing.assert_array_equal(np.asarray(y[-1, -3:]), np.random.Generator(last).random(3))
    small = dispatch.zeros((100, 100))  # small results stay NumPy's
    assert small.device.is_host


HUGE = 10**13  # 72.8 TiB of float64


@pytest.mark.parametrize("make", [
    lambda m: m.ones(HUGE), lambda m: m.empty(HUGE), lambda m: m.zeros(HUGE), lambda m: m.full(HUGE, 2.0),
    lambda m: m.zeros((10**7, 10**6)), lambda m: m.arange(float(HUGE)), lambda m: m.eye(10**7),
    lambda m: m.random.default_rng(1).random(HUGE), lambda m: m.random.rand(HUGE),
    lambda m: m.random.default_rng(1).normal(size=HUGE),
], ids=["ones", "empty", "zeros", "full", "zeros-2d", "arange", "eye", "random", "rand", "normal"])
def test_what_nothing_here_can_hold_raises_memory_error_as_in_numpy(monkeypatch, make):
    """No cluster: NumPy's own ``MemoryError``, not a lazy Dask array; a cluster too small for
    it leaves it to NumPy too."""
    cluster.set_chunk_bytes(1 << 36)  # were it made in Dask, in few chunks
    monkeypatch.setattr(cluster, "_client", None)
    monkeypatch.delenv("DISPATCH_DASK_SCHEDULER", raising=False)
    with pytest.raises(MemoryError):
        make(np)
    with pytest.raises(MemoryError):
        make(dispatch)
    monkeypatch.setattr(cluster, "connected", lambda: True)
    monkeypatch.setattr(cluster, "capacity_bytes", lambda: 1 << 40)
    with pytest.raises(MemoryError):
        make(dispatch)


def test_what_nothing_here_can_hold_is_made_in_dask_when_asked(monkeypatch):
    monkeypatch.setattr(cluster, "_client", None)
    monkeypatch.delenv("DISPATCH_DASK_SCHEDULER", raising=False)
    cluster.set_chunk_bytes(1 << 36)  # 1,100 chunks
    with dispatch.using("dask"):
        for x in (dispatch.ones(HUGE), dispatch.random.default_rng(1).random(HUGE)):
            assert x.device == DASK and x.shape == (HUGE,)

