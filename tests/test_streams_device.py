"""NumPy's ``Generator(PCG64)`` streams drawn by the device path (``dispatch.streams.device``):
through the CUDA kernels where a GPU is present (marked ``gpu``), and through the same passes in
NumPy (``NumpyKernels``) everywhere, CI included."""

from __future__ import annotations

import numpy as np
import pytest
from test_streams import CASES, SEEDS, _ids, _pair

from dispatch.streams import calls, device, kernels


def _cuda() -> object:
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
        return kernels.cupy_kernels()
    except Exception as exc:
        pytest.skip(f"no CUDA device for CuPy: {exc}")


@pytest.fixture(params=[pytest.param("numpy", id="numpy-kernels"),
                        pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)])
def backend(request: pytest.FixtureRequest) -> object:
    return kernels.NumpyKernels() if request.param == "numpy" else _cuda()


def _check(backend: object, ours: np.random.Generator, theirs: np.random.Generator, name: str, args: tuple,
           kwargs: dict) -> None:
    plan = calls.plan(name, args, kwargs)
    assert plan is not None
    got = backend.to_host(device.draw(ours, plan, backend))
    expected = getattr(theirs, name)(*args, **kwargs)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes(), np.flatnonzero(got.reshape(-1) != expected.reshape(-1))[:5]
    assert ours.bit_generator.state == theirs.bit_generator.state


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_bits_and_state(backend: object, case: tuple) -> None:
    name, args, kwargs = case
    for seed in SEEDS[:2]:
        for size in (0, 1, 7, 1001, (3, 5, 7)):
            _check(backend, *_pair(seed), name, (*args, size), kwargs)


def test_mixed_calls(backend: object) -> None:
    ours, theirs = _pair(3)
    for i, (name, args, kwargs) in enumerate([
        ("standard_normal", (2001,), {}),
        ("integers", (0, 7, 33), {"dtype": np.int16}),
        ("standard_normal", (999,), {"dtype": np.float32}),
        ("random", (5,), {"dtype": np.float32}),
        ("standard_exponential", (1001,), {"dtype": np.float32}),
        ("exponential", (3.0, 77), {}),
    ]):
        if i % 2 == 0:
            _check(backend, ours, theirs, name, args, kwargs)
        else:
            assert getattr(ours, name)(*args, **kwargs).tobytes() == getattr(theirs, name)(*args, **kwargs).tobytes()
        assert ours.bit_generator.state == theirs.bit_generator.state


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES[:12], ids=[_ids(c) for c in CASES[:12]])
def test_large_draws_on_the_device(case: tuple) -> None:
    """Millions of draws: many tails (about 3 in 10,000 normals), wedges and rejections."""
    backend = _cuda()
    name, args, kwargs = case
    for seed in SEEDS:
        _check(backend, *_pair(seed), name, (*args, 3_000_017), kwargs)


@pytest.mark.gpu
def test_tens_of_millions_of_normals_on_the_device() -> None:
    backend = _cuda()
    for seed in (0, 2**40 + 1):
        _check(backend, *_pair(seed), "standard_normal", ((4000, 5001),), {})
        _check(backend, *_pair(seed), "standard_normal", (20_000_001,), {"dtype": np.float32})


@pytest.mark.parametrize("case", CASES[:9], ids=[_ids(c) for c in CASES[:9]])
def test_undecided_positions_are_decided_on_the_host(monkeypatch: pytest.MonkeyPatch, case: tuple) -> None:
    """With wide margins many tests count as too close to call: the host decides them all."""
    from dispatch.streams import transforms

    for margin in ("MARGIN64", "MARGIN32", "MARGIN32_TAIL"):
        monkeypatch.setattr(transforms, margin, 0.05)
    name, args, kwargs = case
    for seed in SEEDS[:2]:
        _check(kernels.NumpyKernels(), *_pair(seed), name, (*args, 3001), kwargs)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES[2:9], ids=[_ids(c) for c in CASES[2:9]])
def test_undecided_positions_are_decided_on_the_host_for_the_device(monkeypatch: pytest.MonkeyPatch,
                                                                     case: tuple) -> None:
    """The same with the CUDA kernels, compiled with the wide margins: the host's answers are
    written back into the device's arrays."""
    from dispatch.streams import transforms

    _cuda()
    for margin in ("MARGIN64", "MARGIN32", "MARGIN32_TAIL"):
        monkeypatch.setattr(transforms, margin, 0.05)
    wide = kernels.CupyKernels()
    name, args, kwargs = case
    _check(wide, *_pair(1), name, (*args, 20_001), kwargs)
