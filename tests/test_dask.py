"""The ``dask`` target on a real multi-process cluster: every catalog op Dask implements
equals NumPy's result (and stays in Dask, lazy), the rest falls back to NumPy recorded once,
printing and partial reads compute only what they need, and creation and random draws are
chunked and equal NumPy's.

One ``LocalCluster`` of two worker processes (one thread each) serves the module; chunks are
8 KiB so that these small arrays span many chunks and workers.
"""

from __future__ import annotations

import logging
import types
import warnings

import numpy as np
import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import dispatch
from dispatch import cluster
from dispatch.arrays._array import _DeviceScalar
from dispatch.base.devices import DASK
from dispatch.routing import router

CHUNK = 8192

# ---- the sweep: one line per op, ``name -> call(xp, a)`` where ``xp`` is ``numpy`` or ``dispatch``
# and ``a`` holds the operands (NumPy arrays, or the same arrays held by Dask) ------------------------

_rng = np.random.default_rng(42)


def operands() -> dict[str, np.ndarray]:
    """Host operands, chunked by the sweep: matrices, vectors, ints, bools, NaNs."""
    r = _rng
    A = r.standard_normal((40, 30))
    S = r.standard_normal((48, 48)) + 48 * np.eye(48)
    return {
        "A": A, "A2": r.standard_normal((40, 30)), "P": np.abs(A) + 0.5, "U": r.uniform(-0.9, 0.9, (40, 30)),
        "V": r.standard_normal(2000), "W": r.uniform(0.5, 2.0, 2000), "Vs": np.sort(r.standard_normal(2000)),
        "I": r.integers(-50, 50, (40, 30)), "I2": r.integers(1, 9, (40, 30)), "N": r.integers(0, 20, 2000),
        "B": r.random((40, 30)) > 0.5, "B2": r.random((40, 30)) > 0.3, "C": A + 1j * r.standard_normal((40, 30)),
        "S": S, "SPD": S @ S.T, "b": r.standard_normal(48), "T": r.standard_normal((400, 8)),
        "y": r.standard_normal(400), "X3": r.standard_normal((6, 20, 12)),
        "Nn": np.where(r.random((40, 30)) > 0.8, np.nan, A),
    }


# Ops Dask runs (the result must stay in Dask and equal NumPy's).
DASK_CASES = {
    # element-wise (ufuncs through Dask's __array_ufunc__)
    "add": lambda xp, a: xp.add(a.A, a.A2),
    "subtract": lambda xp, a: xp.subtract(a.A, 1.5),
    "multiply": lambda xp, a: xp.multiply(a.A, a.I),
    "divide": lambda xp, a: xp.divide(a.A, a.P),
    "true_divide int": lambda xp, a: xp.true_divide(a.I, a.I2),
    "power": lambda xp, a: xp.power(a.P, 1.7),
    "maximum": lambda xp, a: xp.maximum(a.A, a.A2),
    "fmin": lambda xp, a: xp.fmin(a.Nn, a.A),
    "exp": lambda xp, a: xp.exp(a.A),
    "log": lambda xp, a: xp.log(a.P),
    "log1p": lambda xp, a: xp.log1p(a.P),
    "sqrt": lambda xp, a: xp.sqrt(a.P),
    "sin": lambda xp, a: xp.sin(a.A),
    "tanh": lambda xp, a: xp.tanh(a.A),
    "arctan2": lambda xp, a: xp.arctan2(a.A, a.A2),
    "atan2 (alias)": lambda xp, a: xp.atan2(a.A, a.A2),
    "acos (alias)": lambda xp, a: xp.acos(a.U),
    "hypot": lambda xp, a: xp.hypot(a.A, a.A2),
    "floor": lambda xp, a: xp.floor(a.A),
    "rint": lambda xp, a: xp.rint(a.A),
    "absolute": lambda xp, a: xp.absolute(a.C),
    "negative": lambda xp, a: xp.negative(a.I),
    "sign": lambda xp, a: xp.sign(a.A),
    "isnan": lambda xp, a: xp.isnan(a.Nn),
    "logical_and": lambda xp, a: xp.logical_and(a.B, a.B2),
    "greater": lambda xp, a: xp.greater(a.A, a.A2),
    "equal": lambda xp, a: xp.equal(a.I, 3),
    "floor_divide": lambda xp, a: xp.floor_divide(a.I, a.I2),
    "remainder": lambda xp, a: xp.remainder(a.I, a.I2),
    "fmod": lambda xp, a: xp.fmod(a.A, 0.7),
    "bitwise_and": lambda xp, a: xp.bitwise_and(a.I, a.I2),
    "left_shift": lambda xp, a: xp.left_shift(a.I2, 3),
    "invert": lambda xp, a: xp.invert(a.B),
    "square": lambda xp, a: xp.square(a.I),
    "cbrt": lambda xp, a: xp.cbrt(a.A),
    "logaddexp": lambda xp, a: xp.logaddexp(a.A, a.A2),
    "copysign": lambda xp, a: xp.copysign(a.P, a.A),
    "nextafter": lambda xp, a: xp.nextafter(a.A, 0.0),
    "signbit": lambda xp, a: xp.signbit(a.A),
    "heaviside": lambda xp, a: xp.heaviside(a.A, 0.5),
    "frexp": lambda xp, a: xp.frexp(a.A),
    "modf": lambda xp, a: xp.modf(a.A),
    "divmod": lambda xp, a: xp.divmod(a.I, a.I2),
    "conj": lambda xp, a: xp.conj(a.C),
    "angle": lambda xp, a: xp.angle(a.C),
    "real": lambda xp, a: xp.real(a.C),
    "clip": lambda xp, a: xp.clip(a.A, -0.5, 0.5),
    "round": lambda xp, a: xp.round(a.A, 2),
    "nan_to_num": lambda xp, a: xp.nan_to_num(a.Nn),
    "isclose": lambda xp, a: xp.isclose(a.A, a.A + 1e-9),
    "where": lambda xp, a: xp.where(a.B, a.A, 0.0),
    "sinc": lambda xp, a: xp.sinc(a.A),
    "i0": lambda xp, a: xp.i0(a.A),
    "operators": lambda xp, a: (a.A + 1) * a.A2 - a.A / a.P,
    "operators int": lambda xp, a: (a.I // 3) % 2 + a.I ** 2,
    "compare": lambda xp, a: a.A > a.A2,
    "astype": lambda xp, a: a.A.astype(np.float32),
    "copy": lambda xp, a: a.A.copy(),
    # reductions (NumPy returns scalars for full reductions: device scalars here)
    "sum": lambda xp, a: xp.sum(a.A),
    "sum axis": lambda xp, a: xp.sum(a.A, axis=0),
    "sum int": lambda xp, a: a.I.sum(axis=1),
    "mean": lambda xp, a: xp.mean(a.A),
    "mean int": lambda xp, a: xp.mean(a.I, axis=0),
    "std": lambda xp, a: xp.std(a.A, axis=1),
    "var ddof": lambda xp, a: xp.var(a.A, ddof=1),
    "min": lambda xp, a: xp.min(a.A),
    "max axis": lambda xp, a: a.A.max(axis=0),
    "argmax": lambda xp, a: xp.argmax(a.A),
    "argmin axis": lambda xp, a: xp.argmin(a.A, axis=1),
    "prod": lambda xp, a: xp.prod(a.W[:40]),
    "any": lambda xp, a: xp.any(a.B),
    "all axis": lambda xp, a: xp.all(a.B, axis=0),
    "count_nonzero": lambda xp, a: xp.count_nonzero(a.I),
    "nansum": lambda xp, a: xp.nansum(a.Nn),
    "nanmean axis": lambda xp, a: xp.nanmean(a.Nn, axis=0),
    "nanmax": lambda xp, a: xp.nanmax(a.Nn),
    "ptp": lambda xp, a: xp.ptp(a.A, axis=0),
    "average weights": lambda xp, a: xp.average(a.V, weights=a.W),
    "trace": lambda xp, a: xp.trace(a.S),
    "vdot": lambda xp, a: xp.vdot(a.V, a.W),
    "median axis": lambda xp, a: xp.median(a.A, axis=0),
    "linalg.norm": lambda xp, a: xp.linalg.norm(a.A),
    "linalg.norm axis": lambda xp, a: xp.linalg.norm(a.A, axis=1),
    # scans
    "cumsum": lambda xp, a: xp.cumsum(a.V),
    "cumsum axis": lambda xp, a: xp.cumsum(a.A, axis=1),
    "cumprod": lambda xp, a: xp.cumprod(a.W[:50]),
    "nancumsum": lambda xp, a: xp.nancumsum(a.Nn, axis=0),
    "diff": lambda xp, a: xp.diff(a.A, axis=0),
    # products
    "matmul": lambda xp, a: xp.matmul(a.A, a.A2.T),
    "matmul operator": lambda xp, a: a.T @ a.T.T,
    "matvec": lambda xp, a: a.S @ a.b,
    "dot": lambda xp, a: xp.dot(a.V, a.W),
    "tensordot": lambda xp, a: xp.tensordot(a.A, a.A2, axes=([0], [0])),
    "einsum": lambda xp, a: xp.einsum("ij,kj->ik", a.A, a.A2),
    "outer": lambda xp, a: xp.outer(a.V[:50], a.W[:60]),
    "cov": lambda xp, a: xp.cov(a.A),
    "corrcoef": lambda xp, a: xp.corrcoef(a.A.T),
    # shapes and copies
    "transpose": lambda xp, a: xp.transpose(a.X3, (2, 0, 1)),
    "T": lambda xp, a: a.A.T,
    "reshape": lambda xp, a: xp.reshape(a.A, (60, 20)),
    "reshape method": lambda xp, a: a.X3.reshape(6, -1),
    "ravel": lambda xp, a: a.A.ravel(),
    "swapaxes": lambda xp, a: xp.swapaxes(a.X3, 0, 2),
    "moveaxis": lambda xp, a: xp.moveaxis(a.X3, 0, -1),
    "squeeze": lambda xp, a: xp.squeeze(xp.expand_dims(a.A, 1)),
    "flip": lambda xp, a: xp.flip(a.A, axis=0),
    "broadcast_to": lambda xp, a: xp.broadcast_to(a.V, (3, 2000)),
    "atleast_2d": lambda xp, a: xp.atleast_2d(a.V),
    "concatenate": lambda xp, a: xp.concatenate([a.A, a.A2], axis=1),
    "concat (alias)": lambda xp, a: xp.concat([a.A, a.A2]),
    "stack": lambda xp, a: xp.stack([a.A, a.A2]),
    "hstack": lambda xp, a: xp.hstack([a.A, a.A2]),
    "vstack": lambda xp, a: xp.vstack([a.A, a.A2]),
    "block": lambda xp, a: xp.block([[a.A, a.A2], [a.A2, a.A]]),
    "tile": lambda xp, a: xp.tile(a.A, (2, 3)),
    "repeat": lambda xp, a: xp.repeat(a.A, 2, axis=0),
    "roll": lambda xp, a: xp.roll(a.A, 7, axis=1),
    "rot90": lambda xp, a: xp.rot90(a.A),
    "pad": lambda xp, a: xp.pad(a.A, 2),
    "diagonal": lambda xp, a: xp.diagonal(a.S),
    "diag": lambda xp, a: xp.diag(a.V[:20]),
    "tril": lambda xp, a: xp.tril(a.S),
    "take": lambda xp, a: xp.take(a.A, [5, 1, 1100, 2]),
    "take axis": lambda xp, a: xp.take(a.A, [5, 1, 29], axis=1),
    "compress": lambda xp, a: xp.compress(a.B[:, 0], a.A, axis=0),
    "insert": lambda xp, a: xp.insert(a.V, 3, 9.0),
    "delete": lambda xp, a: xp.delete(a.A, [1, 4], axis=0),
    "append": lambda xp, a: xp.append(a.A, a.A2, axis=0),
    # indexing
    "index int": lambda xp, a: a.A[3],
    "index slices": lambda xp, a: a.A[2:31, ::2],
    "index list": lambda xp, a: a.A[[1, 5, 3]],
    "index mask": lambda xp, a: a.A[a.B],
    "index ellipsis": lambda xp, a: a.X3[..., 1],
    "index element": lambda xp, a: a.A[3, 4],
    # searching and counting
    "nonzero": lambda xp, a: xp.nonzero(a.B),
    "argwhere": lambda xp, a: xp.argwhere(a.B),
    "flatnonzero": lambda xp, a: xp.flatnonzero(a.I > 40),
    "unique": lambda xp, a: xp.unique(a.N),
    "isin": lambda xp, a: xp.isin(a.I, [1, 2, 3]),
    "searchsorted": lambda xp, a: xp.searchsorted(a.Vs, a.V),
    "digitize": lambda xp, a: xp.digitize(a.V, [-1.0, 0.0, 1.0]),
    "bincount": lambda xp, a: xp.bincount(a.N),
    "histogram range": lambda xp, a: xp.histogram(a.V, bins=7, range=(-3, 3)),
    # linear algebra (the factorisations Dask has)
    "linalg.qr": lambda xp, a: xp.linalg.qr(a.T),
    "linalg.svd": lambda xp, a: xp.linalg.svd(a.T, full_matrices=False),
    "linalg.solve": lambda xp, a: xp.linalg.solve(a.S, a.b),
    "linalg.inv": lambda xp, a: xp.linalg.inv(a.S),
    "linalg.cholesky": lambda xp, a: xp.linalg.cholesky(a.SPD),
    "linalg.lstsq": lambda xp, a: xp.linalg.lstsq(a.T, a.y, rcond=None),
    # FFTs (the transformed axis is rechunked to one chunk)
    "fft.fft": lambda xp, a: xp.fft.fft(a.V),
    "fft.fft axis": lambda xp, a: xp.fft.fft(a.A, axis=0),
    "fft.ifft": lambda xp, a: xp.fft.ifft(a.C),
    "fft.rfft": lambda xp, a: xp.fft.rfft(a.A),
    "fft.irfft": lambda xp, a: xp.fft.irfft(a.C, axis=0),
    "fft.fft2": lambda xp, a: xp.fft.fft2(a.A),
    "fft.fftn": lambda xp, a: xp.fft.fftn(a.X3),
    "fft.fftshift": lambda xp, a: xp.fft.fftshift(a.A),
    # like-creation
    "zeros_like": lambda xp, a: xp.zeros_like(a.A),
    "full_like": lambda xp, a: xp.full_like(a.I, 7),
}

# Ops Dask lacks or computes otherwise: they fall back to NumPy, recorded once each.
FALLBACK = {
    "sort": lambda xp, a: xp.sort(a.A, axis=0),
    "argsort": lambda xp, a: xp.argsort(a.V),
    "partition": lambda xp, a: xp.partition(a.V, 10),
    "percentile": lambda xp, a: xp.percentile(a.V, 30),
    "quantile": lambda xp, a: xp.quantile(a.A, 0.3, axis=0),
    "kron": lambda xp, a: xp.kron(a.S[:4, :4], a.S[:3, :3]),
    "convolve": lambda xp, a: xp.convolve(a.V, a.W[:5]),
    "interp": lambda xp, a: xp.interp(a.V, a.Vs, a.W),
    "linalg.det": lambda xp, a: xp.linalg.det(a.S),
    "linalg.eigh": lambda xp, a: xp.linalg.eigvalsh(a.SPD),
    "cross": lambda xp, a: xp.cross(a.A[:, :3], a.A2[:, :3]),
    "median flat": lambda xp, a: xp.median(a.A),
    "add.reduce": lambda xp, a: xp.add.reduce(a.A, axis=0),
    "svd full": lambda xp, a: xp.linalg.svd(a.T),
}


# ---- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB",
                      dashboard_address=None, silence_logs=logging.ERROR)
    c = Client(lc, set_as_default=False)
    dispatch.config.set_chunk_bytes(CHUNK)  # set first: the cluster's task overhead is not measured
    dispatch.use_cluster(c)
    yield c
    dispatch.use_cluster(None)
    dispatch.config.set_chunk_bytes(None)
    c.close()
    lc.close()


@pytest.fixture(scope="module")
def host():
    return types.SimpleNamespace(**operands())


@pytest.fixture(scope="module")
def held(client, host):
    """The operands held by Dask, chunked."""
    return types.SimpleNamespace(**{k: dispatch.asarray(v).to("dask") for k, v in vars(host).items()})


def _tolerance(dtype: np.dtype) -> dict:
    if dtype.kind in "fc":  # chunked sums add in another order than NumPy's pairwise sums
        return {"rtol": 1e-5, "atol": 1e-6} if dtype in (np.float32, np.complex64) else {"rtol": 1e-9, "atol": 1e-12}
    return {"rtol": 0, "atol": 0}


class Leaf:
    """One array or scalar of a result, described before it is computed."""

    def __init__(self, value) -> None:
        self.value = value
        self.scalar = isinstance(value, (_DeviceScalar, np.generic))
        self.device = getattr(value, "device", None)
        self.dtype, self.shape = np.asarray(value).dtype if isinstance(value, np.generic) else value.dtype, \
            () if isinstance(value, np.generic) else value.shape


def describe(result):
    """The result's structure with every array a ``Leaf`` (still lazy)."""
    if isinstance(result, (tuple, list)):
        return type(result)(*(describe(r) for r in result)) if hasattr(result, "_fields") \
            else type(result)(describe(r) for r in result)
    return Leaf(result)


def leaves(described) -> list[Leaf]:
    if isinstance(described, (tuple, list)):
        return [leaf for d in described for leaf in leaves(d)]
    return [described]


def compute_all(described) -> None:
    """Every leaf's value computed, all in one pass over the cluster."""
    found = leaves(described)
    for leaf, value in zip(found, dispatch.compute(*(leaf.value for leaf in found)), strict=True):
        leaf.value = np.asarray(value)


def assert_equal_numpy(got, want, in_dask: bool) -> None:
    """Same container, result kind (scalar or array), dtype, shape and values as NumPy's;
    ``got`` is described (``describe``) and computed."""
    if isinstance(want, (tuple, list)):
        assert type(got).__name__ == type(want).__name__ and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_equal_numpy(g, w, in_dask)
        return
    assert isinstance(got, Leaf)
    assert got.scalar == isinstance(want, np.generic), f"scalar: {got.scalar}, NumPy's: {type(want).__name__}"
    if in_dask:
        assert got.device == DASK, "the result left Dask"
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.value, want, **_tolerance(want.dtype), equal_nan=True)


def _normalise_signs(result):
    """QR and SVD factors are unique only up to the sign of each vector: make the diagonal of
    R (or the first column of V^H) positive, so Dask's and NumPy's compare."""
    if type(result).__name__ == "QRResult":
        q, r = (np.asarray(getattr(x, "value", x)) for x in result)
        s = np.sign(np.diag(r))
        return q * s, r * s[:, None]
    u, s, vh = (np.asarray(getattr(x, "value", x)) for x in result)
    sign = np.sign(vh[:, 0])
    return u * sign, s, vh * sign[:, None]


@pytest.fixture(scope="module")
def sweep(held, host):
    """Every case's result: built lazily (with Dask's "not implemented" FutureWarning an
    error), described, then computed together."""
    results = {}
    for name, call in DASK_CASES.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            try:
                results[name] = describe(call(dispatch, held))
            except Exception as exc:
                results[name] = exc
    compute_all([r for r in results.values() if not isinstance(r, Exception)])
    return results


@pytest.mark.parametrize("name", sorted(DASK_CASES))
def test_dask_op_equals_numpy(sweep, host, name):
    got, want = sweep[name], DASK_CASES[name](np, host)
    if isinstance(got, Exception):
        raise got
    if name in ("linalg.qr", "linalg.svd"):
        assert all(leaf.device == DASK for leaf in got)
        for g, w in zip(_normalise_signs(got), _normalise_signs(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)
        return
    assert_equal_numpy(got, want, in_dask=True)


@pytest.mark.parametrize("name", sorted(FALLBACK))
def test_the_rest_falls_back_to_numpy_recorded_once(held, host, name):
    call = FALLBACK[name]
    want = call(np, host)
    with warnings.catch_warnings(), dispatch.trace() as t:
        warnings.simplefilter("error", FutureWarning)
        got = describe(call(dispatch, held))
    compute_all(got)
    if name == "svd full":  # NumPy's own answer (the full U is unique only up to signs and a basis)
        assert [g.shape for g in got] == [w.shape for w in want]
        np.testing.assert_allclose(got.S.value, want.S, rtol=1e-12)
    else:
        assert_equal_numpy(got, want, in_dask=False)
    assert sum(t.fallbacks.values()) == 1, t.fallbacks
    ((_op, why),) = t.fallbacks
    assert why.startswith(("dask refused", "dask failed")), why


def test_results_stay_lazy_until_read(held, host):
    y = dispatch.exp(held.A) + held.A2
    assert y.device == DASK and y.target == "dask"
    assert y._engine_array.__dask_graph__() is not None  # a graph, nothing computed yet
    assert float(y.sum()) == pytest.approx(float((np.exp(host.A) + host.A2).sum()))


def test_dask_arrays_are_snapshots_of_host_data(client):
    h = np.arange(10.0)
    d = dispatch.asarray(h).to("dask")
    h[:] = -1  # NumPy semantics: the copy made before does not see this
    np.testing.assert_array_equal(np.asarray(d), np.arange(10.0))


def test_residency_keeps_work_in_dask(held):
    router.clear_decisions()
    small = dispatch.asarray(np.ones(30))
    with dispatch.trace() as t:
        r = held.A + small  # a host operand joins the Dask one
    assert r.device == DASK
    assert t.records[-1].target == "dask" and t.records[-1].reason == "data in dask"


def test_setitem_writes_into_the_dask_array(held, host):
    x = held.A.copy()
    x[2:5, 1] = 7.0
    x[held.B] = 0.0
    want = host.A.copy()
    want[2:5, 1] = 7.0
    want[host.B] = 0.0
    assert x.device == DASK
    np.testing.assert_array_equal(np.asarray(x), want)


def test_inplace_operator(held, host):
    x = held.A.copy()
    x += 1
    x *= held.A2
    assert x.device == DASK
    np.testing.assert_allclose(np.asarray(x), (host.A + 1) * host.A2)


# ---- materialising: printing and partial reads ----------------------------------------------------


@pytest.mark.parametrize("shape", [(7,), (1001,), (3000,), (40, 30), (7, 8), (200, 3), (3, 200), (5, 6, 70), (1, 1500)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool", "complex128", "uint8"])
def test_repr_and_str_equal_numpy(client, shape, dtype):
    rng = np.random.default_rng(sum(shape))
    h = (rng.standard_normal(shape) * 1000).astype(dtype) if dtype != "bool" else rng.random(shape) > 0.5
    if dtype == "complex128":
        h = h + 1j * rng.standard_normal(shape)
    d = dispatch.asarray(h).to("dask")
    assert repr(d) == repr(h)
    assert str(d) == str(h)


def test_repr_follows_print_options(client):
    h = np.linspace(-1e6, 1e-3, 5000).reshape(50, 100)
    d = dispatch.asarray(h).to("dask")
    with np.printoptions(edgeitems=2, linewidth=60, precision=3, suppress=True):
        assert repr(d) == repr(h) and str(d) == str(h)


def test_repr_computes_only_the_corners(client):
    """Printing needs the chunks holding the corners only: of a 1-D array of many chunks, the
    first and the last."""
    from dask.core import flatten

    from dispatch.targets._dask_print import _corners

    with dispatch.using("dask"):
        x = dispatch.arange(20000.0)
    assert x._engine_array.npartitions > 4
    corner = _corners(x._engine_array, 3)
    needed = corner.__dask_graph__().cull(set(flatten(corner.__dask_keys__())))
    chunks = {k for k in needed.to_dict() if isinstance(k, tuple) and str(k[0]).startswith("arange")}
    assert len(chunks) == 2
    assert repr(x) == repr(np.arange(20000.0))


def test_item_and_float_read_one_element(held, host):
    assert held.A.item(7) == host.A.item(7)
    assert held.A.item(3, 4) == host.A.item(3, 4)
    assert held.A.item((2, 1)) == host.A.item((2, 1))
    assert float(held.A[1, 2]) == float(host.A[1, 2])
    assert held.A[:2, :3].tolist() == host.A[:2, :3].tolist()
    with pytest.raises(IndexError):
        held.A.item(10**6)


def test_compute_and_persist(held, host):
    a, b, c = dispatch.compute(held.A + 1, held.A.sum(), 5)
    assert a.device.is_host and isinstance(b, np.generic) and c == 5
    np.testing.assert_allclose(np.asarray(a), host.A + 1)
    p = (held.A * 2).persist()
    assert p.device == DASK
    np.testing.assert_allclose(np.asarray(p), host.A * 2)


# ---- routing -----------------------------------------------------------------------------------------


def test_connected_cluster_takes_work_spanning_chunks(client):
    router.clear_decisions()
    big = dispatch.asarray(np.ones(4 * CHUNK))  # 32 KiB: spans chunks of the connected cluster
    with dispatch.trace() as t:
        r = dispatch.sin(big)
    assert r.device == DASK and t.records[-1].reason.startswith("scale-out")
    small = dispatch.asarray(np.ones(8))
    assert (small + small).device.is_host


def test_without_a_cluster_large_work_stays_off_dask(monkeypatch):
    """No cluster: an op whose result would exceed the memory fraction runs where the policy
    says, never on Dask unasked (Dask's threaded scheduler has no more memory than NumPy)."""
    monkeypatch.setattr(cluster, "_client", None)
    monkeypatch.delenv("DISPATCH_DASK_SCHEDULER", raising=False)
    monkeypatch.setattr(cluster, "host_free_bytes", lambda: 1 << 20)  # 1 MiB free
    monkeypatch.setattr(cluster, "LIVE_ELEMENTS", 1 << 9)  # as a small chunk size makes it
    router.clear_decisions()
    try:
        a = dispatch.asarray(np.ones((600, 1)))
        b = dispatch.asarray(np.ones((1, 600)))
        big = dispatch.matmul(a, b)  # 2.9 MB result > 0.5 of 1 MiB
        assert big.device.is_host
        np.testing.assert_array_equal(np.asarray(big), np.ones((600, 600)))
    finally:
        router.clear_decisions()


def test_the_cluster_takes_what_its_memory_and_spill_space_hold(client):
    """Its workers' memory limits (2 x 1 GiB) and the free disk they spill to; an array larger
    than that stays off it, and NumPy raises ``MemoryError`` for what the host cannot hold."""
    import shutil

    room = cluster.capacity_bytes()
    folder = next(iter(client.run(lambda dask_worker: dask_worker.local_directory).values()))
    disk = shutil.disk_usage(folder).free
    assert abs(room - (2 << 30) - disk) < 0.05 * disk + (64 << 20)
    assert dispatch.zeros(4 * CHUNK).device == DASK
    with pytest.raises(MemoryError):
        dispatch.zeros(int(room) // 8 * 2)  # twice what the cluster holds: NumPy tries, as it would


def test_using_dask_forces_dask(client, host):
    with dispatch.using("dask"):
        x = dispatch.asarray(host.V)
        y = dispatch.cumsum(x)
    assert y.device == DASK
    np.testing.assert_allclose(np.asarray(y), np.cumsum(host.V))


def test_device_and_target_names(held):
    assert held.A.device == dispatch.Device("dask") and str(held.A.device) == "dask"
    assert held.A.target == "dask"
    assert cluster.address().startswith("tcp://")


# ---- a local cluster sized to the host ------------------------------------------------------------------


@pytest.mark.parametrize(("cores", "host", "memory", "chunk", "split"), [
    (2, 24, 2, 64, (2, 1, 1 << 30)),  # this benchmark's cluster on a 2-core machine
    (2, 24, None, 64, (2, 1, 6 << 30)),  # half the host by default
    (32, 256, None, 64, (8, 4, 16 << 30)),  # Dask's own split of 32 cores
    (32, 256, 2, 64, (1, 3, 2 << 30)),  # 2 GiB hold 3 threads' chunks, not 16 workers' of 2 threads
    (32, 256, 16, 512, (3, 1, (16 << 30) // 3)),
    (1, 4, None, 8, (1, 1, 2 << 30)),
])
def test_a_local_cluster_is_sized_to_the_host_and_the_chunks(cores, host, memory, chunk, split):
    got = cluster.local_cluster_options(chunk << 20, memory and memory << 30, cores=cores, host_memory=host << 30)
    assert (got["n_workers"], got["threads_per_worker"], got["memory_limit"]) == split
    working = got["threads_per_worker"] * cluster.TASK_CHUNKS * (chunk << 20)
    assert cluster.WORKER_BASE_BYTES + working / cluster.WORKING_SHARE <= got["memory_limit"]
    assert got["n_workers"] * got["threads_per_worker"] <= cores
    assert got["n_workers"] * got["memory_limit"] <= (memory or host / 2) * (1 << 30)


def test_a_chunk_no_worker_can_hold_is_refused():
    with pytest.raises(ValueError, match="too few"):
        cluster.local_cluster_options(1 << 30, 2 << 30, cores=32, host_memory=256 << 30)
