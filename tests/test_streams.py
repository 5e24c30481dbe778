"""The parallel draw of NumPy's ``Generator(PCG64)`` streams, on the host (``dispatch.streams``):
the same bits as NumPy's own methods, and NumPy's generator left where its own draw leaves it."""

from __future__ import annotations

import numpy as np
import pytest

from dispatch.streams import calls, pcg64, reference, scan
from dispatch.streams import transforms as tf

SEEDS = (0, 1, 12345, 2**63 + 11)

# (method, args, kwargs) with the size last in args, as "N".
CASES = [
    ("random", (), {}),
    ("random", (), {"dtype": np.float32}),
    ("standard_normal", (), {}),
    ("standard_normal", (), {"dtype": np.float32}),
    ("normal", (1.5, 2.0), {}),
    ("uniform", (-1, 3), {}),
    ("standard_exponential", (), {}),
    ("standard_exponential", (), {"dtype": "float32"}),
    ("exponential", (2.5,), {}),
    ("integers", (0, 10), {}),
    ("integers", (-5, 2**40), {}),
    ("integers", (0, 2**62 + 2**61), {}),  # Lemire on 64-bit draws, a third rejected
    ("integers", (-(2**63), 2**63 - 1), {"endpoint": True}),  # every 64-bit draw
    ("integers", (0, 2**32), {}),  # every 32-bit draw, in an int64
    ("integers", (-7, 2**30 + 5), {"dtype": np.int32}),
    ("integers", (0, 2**31 + 1), {"dtype": np.uint32}),  # half the 32-bit draws rejected
    ("integers", (0, 2**32), {"dtype": np.uint32}),
    ("integers", (3, 1000), {"dtype": np.int16}),
    ("integers", (0, 2**16), {"dtype": np.uint16}),
    ("integers", (-100, 100), {"dtype": np.int8}),
    ("integers", (0, 256), {"dtype": np.uint8}),
    ("integers", (0, 2), {"dtype": bool}),
    ("integers", (5, 6), {}),  # one value: NumPy draws nothing
]


def _ids(case: tuple) -> str:
    name, args, kwargs = case
    return f"{name}{args}{kwargs.get('dtype', '')}{'-endpoint' if kwargs.get('endpoint') else ''}"


def _pair(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    return np.random.Generator(np.random.PCG64(seed)), np.random.Generator(np.random.PCG64(seed))


def _same(ours: np.ndarray, numpy_: np.ndarray) -> None:
    assert ours.dtype == numpy_.dtype and ours.shape == numpy_.shape
    assert ours.tobytes() == numpy_.tobytes(), np.flatnonzero(ours.reshape(-1) != numpy_.reshape(-1))[:5]


def _draw_both(ours: np.random.Generator, theirs: np.random.Generator, name: str, args: tuple, kwargs: dict) -> None:
    plan = calls.plan(name, args, kwargs)
    assert plan is not None
    _same(reference.draw(ours, plan), getattr(theirs, name)(*args, **kwargs))
    assert ours.bit_generator.state == theirs.bit_generator.state


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_pcg64_positions(seed: int) -> None:
    g = np.random.Generator(np.random.PCG64(seed))
    state = pcg64.State.of(g.bit_generator)
    expected = g.bit_generator.random_raw(3000)
    assert (pcg64.raw64(state, 0, 3000) == expected).all()
    assert (pcg64.raw64(state, 1234, 77, per_worker=5) == expected[1234:1311]).all()
    assert pcg64.jump(state.state, state.inc, 3000) == g.bit_generator.state["state"]["state"]


def test_pcg64_buffered_half() -> None:
    g = np.random.Generator(np.random.PCG64(5))
    g.integers(0, 10, size=1, dtype=np.uint32)  # leaves a high half in the state
    state = pcg64.State.of(g.bit_generator)
    assert state.has_uint32 == 1
    words = g.integers(0, 2**32, size=101, dtype=np.uint32)
    assert (pcg64.raw32(state, 0, 101) == words).all()
    assert (pcg64.raw32(state, 6, 20) == words[6:26]).all()


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
@pytest.mark.parametrize("size", [0, 1, 2, 7, 1001, (3, 5, 7)])
def test_bits_and_state(case: tuple, size: object) -> None:
    name, args, kwargs = case
    for seed in SEEDS:
        _draw_both(*_pair(seed), name, (*args, size), kwargs)


@pytest.mark.parametrize("case", CASES[:9], ids=[_ids(c) for c in CASES[:9]])
def test_large_draws(case: tuple) -> None:
    """About 1e5 draws: the ziggurats' wedges and tails all come up."""
    name, args, kwargs = case
    _draw_both(*_pair(2024), name, (*args, (317, 331)), kwargs)


def test_float32_tails_and_wedges_come_up() -> None:
    method = tf.Normal32()
    raw = reference.stream(method, pcg64.State.of(np.random.PCG64(9)), 0, 100_000)
    k, _accept, _value, _rare, tail = method.first(raw)
    assert tail.sum() > 10 and (k == 2).sum() > 100  # the test above met both paths


@pytest.mark.parametrize("seed", SEEDS)
def test_mixed_calls_on_one_generator(seed: int) -> None:
    """Parallel draws and NumPy's own, in turn on one generator, give NumPy's sequence."""
    ours, theirs = _pair(seed)
    steps = [
        ("standard_normal", (1001,), {}),
        ("integers", (0, 7, 33), {"dtype": np.int16}),  # leaves a half of a 64-bit draw unused
        ("random", (5,), {"dtype": np.float32}),
        ("standard_exponential", (999,), {"dtype": np.float32}),
        ("normal", (0.0, 3.0, 17), {}),
        ("integers", (0, 100, 9), {"dtype": np.uint8}),
        ("uniform", (2.0, 9.0, 1000), {}),
        ("standard_normal", (333,), {"dtype": np.float32}),
    ]
    for i, (name, args, kwargs) in enumerate(steps):
        if i % 2 == seed % 2:
            _draw_both(ours, theirs, name, args, kwargs)
        else:  # NumPy's own draw on both
            _same(getattr(ours, name)(*args, **kwargs), getattr(theirs, name)(*args, **kwargs))
        assert ours.bit_generator.state == theirs.bit_generator.state
        _same(ours.random(3), theirs.random(3))  # a scalar-sized NumPy draw in between


@pytest.mark.parametrize(
    "name, args, kwargs",
    [
        ("random", (5,), {"out": np.empty(5)}),
        ("random", (5,), {"dtype": np.int32}),
        ("standard_normal", (), {}),  # a scalar
        ("standard_exponential", (5,), {"method": "inv"}),
        ("normal", (np.zeros(3), 1.0, 3), {}),
        ("normal", (0.0, -1.0, 3), {}),
        ("uniform", (0.0, np.inf, 3), {}),
        ("integers", (5, 5, 3), {}),
        ("integers", (0, 300, 3), {"dtype": np.uint8}),
        ("integers", (0.5, 3, 3), {}),
        ("integers", (0, 5, 3), {"dtype": np.float64}),
        ("gamma", (1.0, 1.0, 3), {}),
        ("random", (-1,), {}),
    ],
)
def test_other_calls_are_left_to_numpy(name: str, args: tuple, kwargs: dict) -> None:
    assert calls.plan(name, args, kwargs) is None


def _sequential_starts(k: np.ndarray) -> np.ndarray:
    starts, p = np.zeros(k.size, bool), 0
    while p < k.size:
        starts[p] = True
        p += int(k[p])
    return starts


@pytest.mark.parametrize("seed", range(6))
def test_chain_starts_match_a_sequential_walk(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for ones in (0.99, 0.7, 0.2):  # from the ziggurats' case to long runs of longer attempts
        k = np.where(rng.random(5000) < ones, 1, rng.choice([2, 3, 5, 9], 5000))
        assert (scan.chain_starts(k) == _sequential_starts(k)).all()


@pytest.mark.parametrize("method", [tf.Normal64(), tf.Normal32(), tf.Exponential64(), tf.Exponential32()],
                         ids=lambda m: type(m).__name__)
def test_vectorized_pass_agrees_with_the_exact_one(method: tf.Method) -> None:
    """Where the vectorized pass (another exp and log1p than the host libm's) settles a
    position, the exact host pass agrees, tails' values made on the host included; where it
    cannot, it says so (``rare``)."""
    raw = reference.stream(method, pcg64.State.of(np.random.PCG64(77)), 0, 40_000)
    k, accept, value, rare, tail = method.first(raw)
    assert tail.sum() > 3
    at = lambda q: int(raw[q])  # noqa: E731
    for p in np.flatnonzero((k != 1) | ~accept | tail)[:500]:
        if not rare[p]:
            kk, ok, v = method.resolve(at, int(p))
            mine = method.tail_values(value[p : p + 1])[0] if tail[p] else value[p]
            assert (kk, ok) == (k[p], accept[p]) and (not ok or v == mine)
