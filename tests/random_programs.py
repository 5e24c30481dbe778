"""Programs drawn at random from a seed, to run routed and on NumPy and compare (``equal_to_numpy``):
the sequences of calls no single-op test makes, where regions, plans, mirrors and the history
meet. ``vectors`` and ``matrices`` draw them; ``device`` names the target that ``x.to(device)``
moves an array to (``cupy`` with the fake CuPy, ``torch-cpu`` on the host).
"""

from __future__ import annotations

from typing import Any

import numpy
import pytest

import dispatch
from dispatch.routing import router
from dispatch.routing.history import History

__all__ = ["equal_to_numpy", "matrices", "vectors"]


def vectors(seed: int, program: Any, n: int, device: str) -> tuple[list, list[float]]:
    """A program drawn by ``seed``: element-wise calls, in-place updates, writes through slices,
    reductions and whole-array reads on the host, fresh arrays, arrays moved to the device (a
    no-op for NumPy), strided views and masks, in loop bodies of one to four of these met one to
    six times, the host reading the last one's result after half of them. Returns its arrays at
    the end and every value it read on the host, in order."""
    rng = numpy.random.default_rng(seed)
    draw = numpy.random.default_rng(1000 + seed)
    pool = [program.asarray(draw.random(n) + 0.5) for _ in range(3)]
    reads: list[float] = []

    def step(kind: int, i: int, j: int, k: int) -> None:
        a, b = pool[i], pool[j]
        if kind == 0:
            pool[k] = program.cos(a) + b
        elif kind == 1:
            pool[k] = 0.5 * a * b
        elif kind == 2:
            pool[k] = program.sqrt(program.abs(a - b))
        elif kind == 3:
            pool[i] += 0.25 * b  # in place: a view of it, a mirror of it, must see the write
        elif kind == 4:
            pool[i][: n // 3] = b[n // 3: 2 * (n // 3)]  # a write through a slice
        elif kind == 5:
            reads.append(float(a.sum()))
        elif kind == 6:
            reads.append(float(numpy.asarray(a)[n // 2]))  # the whole array read on the host
        elif kind == 7:
            pool[k] = program.zeros(n) + b
        elif kind == 8 and program is dispatch:
            pool[i] = a.to(device)
        elif kind == 9:
            pool[k] = program.exp(-a) * program.exp(-b)
        elif kind == 10:
            pool[k] = program.concatenate([a[::2], b[1::2]])  # strided views
        elif kind == 11:
            pool[k] = program.where(a > b, a, b - 1.0)  # a mask made and read where the data is
        elif kind == 12:
            pool[k] = program.tanh(a)  # a body of one call

    for args in _draw(rng, 13, 24, 4, 6, read=6):
        step(*args)
    return pool, reads


# The kinds of step that write ``pool[i]`` (in place, or moving it); every other one makes ``pool[k]``.
_IN_PLACE = frozenset({3, 4, 8})


def _draw(rng: numpy.random.Generator, kinds: int, length: int, longest: int, most: int, read: int) -> list[tuple]:
    """At least ``length`` steps ``(kind, i, j, k)`` over a pool of three arrays: loop bodies of one
    to ``longest`` steps, each met one to ``most`` times, after half of them a step of kind ``read``
    on what the body's last step made (the host reads it)."""
    plan: list[tuple] = []
    while len(plan) < length:
        body = [tuple(int(v) for v in (rng.integers(kinds), *rng.integers(3, size=3)))
                for _ in range(int(rng.integers(1, longest + 1)))]
        plan += body * int(rng.integers(1, most + 1))
        if rng.random() < 0.5:
            last = body[-1]
            plan.append((read, last[1] if last[0] in _IN_PLACE else last[3], 0, 0))
    return plan


def equal_to_numpy(make: Any, seed: int, learning: bool, monkeypatch: Any, rtol: float, atol: float = 0.0) -> None:
    """The program ``make(seed, module)`` routed and on NumPy: the same arrays (dtype, shape,
    values) and the same values read on the host. ``learning``: routed by what its calls
    measured too (the fake device computes at NumPy's speed, so kinds of call move back and
    forth), with explorations."""
    if learning:
        monkeypatch.setattr(router.ROUTER, "history", History(explore_probability=0.3, seed=seed))
        monkeypatch.setattr(router, "observe", router.ROUTER.observe)
    got, got_reads = make(seed, dispatch)
    want, want_reads = make(seed, numpy)
    assert got_reads == pytest.approx(want_reads, rel=rtol)
    for g, w in zip(got, want, strict=True):
        result = numpy.asarray(g)
        assert result.dtype == w.dtype and result.shape == w.shape
        numpy.testing.assert_allclose(result, w, rtol=rtol, atol=atol)


def matrices(seed: int, program: Any, m: int, device: str) -> tuple[list, list[float]]:
    """``vectors`` over square matrices: products, transposes, reductions along an axis
    broadcast back, float32 casts, masked selections read on the host, and writes through a row
    and a column."""
    rng = numpy.random.default_rng(seed)
    draw = numpy.random.default_rng(2000 + seed)
    pool = [program.asarray(draw.random((m, m)) - 0.5) for _ in range(3)]
    reads: list[float] = []

    def step(kind: int, i: int, j: int, k: int) -> None:
        a, b = pool[i], pool[j]
        if kind == 0:
            pool[k] = (a @ b) / m
        elif kind == 1:
            pool[k] = a.T - b
        elif kind == 2:
            pool[k] = a - a.mean(axis=1, keepdims=True) + b.sum(axis=0) / m
        elif kind == 3:
            pool[i] *= 0.5
            pool[i] += b.T
        elif kind == 4:
            pool[i][m // 2] = b[:, 1]  # a row written from a column
        elif kind == 5:
            reads.append(float(a[a > 0.1].sum()))
        elif kind == 6:
            reads.append(float(program.linalg.norm(a)))
        elif kind == 7:
            pool[k] = a.astype(program.float32).astype(program.float64) * b
        elif kind == 8 and program is dispatch:
            pool[i] = a.to(device)
        elif kind == 9:
            pool[k] = program.maximum(a, b).cumsum(axis=0) / m

    for args in _draw(rng, 10, 16, 3, 4, read=5):
        step(*args)
    return pool, reads

