"""Draws on the host through ``dispatch.random``'s generators: NumPy's numbers, as dispatch
arrays, whichever path a draw takes (the common small draw's, or the full one's)."""

from __future__ import annotations

import pickle

import numpy
import pytest

import dispatch
from dispatch import random as drandom


def _same(got: object, expected: object) -> None:
    host = numpy.asarray(got)
    assert host.dtype == numpy.asarray(expected).dtype
    assert host.shape == numpy.shape(expected)
    numpy.testing.assert_array_equal(host, expected)


@pytest.mark.parametrize(("method", "args", "kwargs"), [
    ("random", (10,), {}),
    ("random", ((4, 5),), {}),
    ("random", (), {"size": (2, 3), "dtype": numpy.float32}),
    ("standard_normal", ((3, 2),), {}),
    ("integers", (0, 7), {"size": (5,)}),
    ("integers", (0, 7, 6), {"dtype": "int16"}),
    ("normal", (1.0, 2.0, 4), {}),
    ("random", (), {}),
])
def test_small_draws_are_numpys_numbers(method: str, args: tuple, kwargs: dict) -> None:
    ours, theirs = dispatch.random.default_rng(5), numpy.random.default_rng(5)
    for _ in range(3):  # the wrapper made on the first draw, kept for the next
        got, expected = getattr(ours, method)(*args, **kwargs), getattr(theirs, method)(*args, **kwargs)
        _same(got, expected)
        if isinstance(expected, numpy.ndarray):
            assert isinstance(got, dispatch.ndarray)
        else:
            assert type(got) is type(expected)


def test_draws_given_arrays_take_them_from_dispatch_arrays() -> None:
    loc = numpy.arange(6.0).reshape(2, 3)
    ours, theirs = dispatch.random.default_rng(9), numpy.random.default_rng(9)
    _same(ours.normal(dispatch.asarray(loc), 0.5), theirs.normal(loc, 0.5))
    _same(ours.choice(dispatch.asarray(loc.ravel()), size=4), theirs.choice(loc.ravel(), size=4))
    out = dispatch.zeros(5)
    assert ours.random(out=out) is out
    _same(out, theirs.random(out=numpy.zeros(5)))


@pytest.mark.parametrize("seed", [[1, 2, 3], numpy.arange(4), numpy.array([2**40, 5], dtype=numpy.uint64)],
                         ids=["list", "arange", "uint64"])
def test_a_seed_held_in_a_dispatch_array_seeds_every_constructor_as_numpys(seed) -> None:
    """``default_rng(np.array([1, 2, 3]))``: the array is read as NumPy reads its own, by
    ``default_rng`` as by the seed sequence, the bit generators and ``RandomState``."""
    ours = dispatch.asarray(seed)
    _same(dispatch.random.default_rng(ours).random(4), numpy.random.default_rng(seed).random(4))
    _same(dispatch.random.Generator(dispatch.random.PCG64(ours)).random(2),
          numpy.random.Generator(numpy.random.PCG64(seed)).random(2))
    _same(dispatch.random.SeedSequence(ours).generate_state(3), numpy.random.SeedSequence(seed).generate_state(3))
    if numpy.asarray(seed).max() < 2**32:  # RandomState's seeds are 32-bit
        _same(dispatch.random.RandomState(ours).random_sample(2), numpy.random.RandomState(seed).random_sample(2))
    with pytest.raises(TypeError):  # a 0-d array is no sequence: NumPy refuses it too
        dispatch.random.default_rng(dispatch.asarray(9))
    with pytest.raises(TypeError):
        numpy.random.default_rng(numpy.array(9))


def test_a_new_numpy_generator_inside_drops_the_kept_methods() -> None:
    rng = dispatch.random.default_rng(1)
    rng.random(2)  # its wrapper kept, bound to the first NumPy generator
    rng.__setstate__(numpy.random.default_rng(7))
    _same(rng.random(3), numpy.random.default_rng(7).random(3))


def test_pickled_generators_continue_numpys_stream() -> None:
    rng, expected = dispatch.random.default_rng(3), numpy.random.default_rng(3)
    _same(rng.random(4), expected.random(4))
    again = pickle.loads(pickle.dumps(rng))
    _same(again.random(4), expected.random(4))
    assert isinstance(again, drandom.Generator)


def test_traced_small_draws_give_the_same_numbers() -> None:
    ours, theirs = dispatch.random.default_rng(11), numpy.random.default_rng(11)
    with dispatch.trace():
        _same(ours.integers(0, 100, (3, 3)), theirs.integers(0, 100, (3, 3)))
    _same(ours.integers(0, 100, (3, 3)), theirs.integers(0, 100, (3, 3)))


def test_a_draw_with_a_bad_size_raises_as_numpy() -> None:
    with pytest.raises(ValueError):
        numpy.random.default_rng(0).random((-1, 2))
    with pytest.raises(ValueError):
        dispatch.random.default_rng(0).random((-1, 2))
