"""A script's first estimator call with no history, on a calibrated machine with a GPU: priced.

A large fit the prices say the GPU wins by far goes there at once, without running stock
scikit-learn first; a call that cannot repay the GPU's start-up on its own never brings it up
(its library is not even asked for). The GPU is the synthetic calibration's ``cupy``
(``tests/_synthetic.py``): nothing here needs one, and nothing runs on it (``choose`` only).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from _synthetic import synthetic
from helpers import router_restored
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.preprocessing import StandardScaler

from dispatch import targets
from dispatch.routing import router, startup
from dispatch.routing.history import History
from dispatch.sklearn import _price, _routing

LDA = LinearDiscriminantAnalysis


def _calibrated(startup_s: float):
    cal = synthetic(gpu=True)
    cal.extra["startup"] = {"cupy": {"import_s": startup_s / 2, "context_s": startup_s / 2, "first_call_s": 0.0}}
    return cal


@pytest.fixture
def gpu_machine(monkeypatch):
    """The synthetic calibration with its GPU in use, the GPU not up (a fresh process); records
    every probe of it (a probe brings a target up) and every check of a call against it."""
    monkeypatch.setattr(targets.registry, "_targets", {k: v for k, v in targets.registry._targets.items()
                                                       if k != "cupy"})
    monkeypatch.setattr(targets.registry, "_unavailable", {k: v for k, v in targets.registry._unavailable.items()
                                                           if k != "cupy"})
    asked = {"probed": [], "checked": []}
    real_probe = targets.probe

    def probe(name):
        asked["probed"].append(name)
        return real_probe(name)

    monkeypatch.setattr(targets, "probe", probe)
    monkeypatch.setattr(_routing, "_refusal", lambda est, method, name, X, others: asked["checked"].append(name))
    _routing.forget()
    with router_restored(History()):
        router.ROUTER.calibration_checked = True

        def use(startup_s: float) -> None:
            router.use_calibration(_calibrated(startup_s))
            _price.forget()

        yield use, asked
    startup.use_calibration(None)
    _routing.forget()


def _data(rows: int, features: int):
    """A matrix of that shape that takes no memory (``choose`` reads shapes and dtypes only)."""
    return np.broadcast_to(np.zeros(1), (rows, features)), np.broadcast_to(np.zeros(1), (rows,))


def test_a_large_fit_the_gpu_wins_by_far_goes_there_on_a_first_run(gpu_machine):
    use, asked = gpu_machine
    use(0.5)
    X, y = _data(1_000_000, 150)
    prices = _price.seconds(LDA, "fit", X, (y,))
    assert prices["cupy"] + startup.seconds("cupy") < (1 - _routing.FAR_SHARE) * prices["numpy"]
    choice = _routing.choose(LDA(), "fit", X, (y,))
    assert choice.target == "cupy", choice
    assert choice.reason.endswith("by far, stock scikit-learn not measured")
    assert choice.learn == (LDA, "fit", X.size.bit_length())  # its time on the GPU is kept for the next run
    assert asked["checked"] == ["cupy"]
    # the next calls go there too, stock still not run; the GPU's first call is timed once more
    # (it may have paid one-time costs), then no more
    _routing.observe(choice.learn, "cupy", 0.3)
    again = _routing.choose(LDA(), "fit", X, (y,))
    assert again.target == "cupy" and again.learn == choice.learn
    _routing.observe(choice.learn, "cupy", 0.25)
    settled = _routing.choose(LDA(), "fit", X, (y,))
    assert settled.target == "cupy" and settled.learn is None


def test_a_small_fit_never_brings_the_gpu_up(gpu_machine):
    """The table sends a HIGH call of 200,000 elements to the GPU tier; priced, it saves far less
    than the GPU's start-up: stock scikit-learn, and CuPy is not even probed."""
    use, asked = gpu_machine
    use(0.5)
    X, _ = _data(4_000, 50)
    choice = _routing.choose(PCA(4), "fit", X)
    assert choice.target is None and not choice.fallback
    assert "-> GPU, but cupy is not up: priced to save" in choice.reason
    assert choice.reason.endswith("less than its start-up of 500 ms")
    assert asked == {"probed": [], "checked": []}


def test_a_large_fit_that_cannot_repay_the_start_up_runs_stock_and_is_timed(gpu_machine):
    """Over ``LEARN_MIN`` elements but priced to save less than a 10 s start-up: stock, timed; the
    alternative is measured only once stock's own time says the GPU could repay its start-up."""
    use, asked = gpu_machine
    use(10.0)
    X, y = _data(8_000, 150)
    assert X.size >= _routing.LEARN_MIN
    key = (LDA, "fit", X.size.bit_length())
    first = _routing.choose(LDA(), "fit", X, (y,))
    assert first.target is None and first.learn == key
    assert "but cupy is not up: priced to save" in first.reason and "start-up of 10,000 ms" in first.reason
    _routing.observe(key, None, 0.05)  # stock took 50 ms: the GPU cannot save 10 s on it
    second = _routing.choose(LDA(), "fit", X, (y,))
    assert second.target is None and second.learn is None
    assert asked == {"probed": [], "checked": []}
    _routing.observe(key, None, 60.0)  # stock took a minute, far over its price: the GPU may repay it
    third = _routing.choose(LDA(), "fit", X, (y,))
    assert third == _routing.Choice("cupy", "cupy: measuring the alternative", learn=key)
    assert asked["checked"] == ["cupy"]


def test_prices_follow_the_work_shape():
    """Priced from the calibration in use: a fit of a factorising estimator by its factorisation,
    a predict or a scaler by one pass over X, a device paying the copy of X to it; iterative
    work not at all."""
    with router_restored(History()):
        router.ROUTER.calibration_checked = True
        router.use_calibration(_calibrated(0.5))
        _price.forget()
        X, y = _data(100_000, 100)
        fit = _price.seconds(LDA, "fit", X, (y,))
        predict = _price.seconds(LDA, "predict", X)
        scale = _price.seconds(StandardScaler, "fit", X)
        assert set(fit) == {"numpy", "torch-cpu", "cupy"}
        assert fit["numpy"] > 10 * predict["numpy"] > 0  # a factorisation against one pass
        assert fit["cupy"] < fit["numpy"]
        assert scale == predict
        assert predict["cupy"] >= X.nbytes / 10e9  # the copy to it, at its staged rate
        assert _price.seconds(KMeans, "fit", X) == {}  # iterations not known
        assert _price.seconds(LDA, "fit", X[:, 0]) == {}  # not a matrix
    _price.forget()
    assert _price.seconds(LDA, "fit", X) == {}  # no calibration: nothing priced


def test_a_first_slow_call_on_the_gpu_kept_by_a_run_does_not_keep_the_next_run_off_it(gpu_machine, monkeypatch):
    """Run 1's only call on the GPU paid one-time costs (CuPy compiling kernels its disk cache
    lacked: seconds): the next run, in a fresh process, still takes the GPU where the price says
    it wins by far, and measures it again; a second slow measurement counts."""
    from dispatch.routing import learned

    use, _ = gpu_machine
    use(0.5)
    X, y = _data(1_000_000, 150)
    key = (LDA, "fit", X.size.bit_length())
    assert _routing.choose(LDA(), "fit", X, (y,)).learn == key
    _routing.observe(key, "cupy", 1e3)  # far over stock's price
    kept = _routing._kept()
    assert kept[0]["tries"] == 1
    _routing.forget()  # the next run: a fresh process reading what the last one kept
    monkeypatch.setattr(learned, "earlier", lambda section: kept if section == "sklearn" else None)
    again = _routing.choose(LDA(), "fit", X, (y,))
    assert again.target == "cupy" and again.learn == key, again
    _routing.observe(key, "cupy", 1e3)  # slow twice: not a one-time cost
    kept = _routing._kept()
    _routing.forget()
    monkeypatch.setattr(learned, "earlier", lambda section: kept if section == "sklearn" else None)
    third = _routing.choose(LDA(), "fit", X, (y,))
    assert third.target is None and "but cupy is not up" in third.reason and third.learn == key


def test_a_gpu_call_measured_to_win_by_far_is_not_measured_on_stock(gpu_machine, monkeypatch):
    """Priced to win, not by far (a large factorisation's price on a device errs high: an H200's
    quick calibration priced LDA's 1M x 150 fit at 3 s on CuPy, which took under 1 s), the GPU
    runs first; measured far under stock's price, stock scikit-learn is not run to learn that
    it loses, neither later in this run nor in the next run. Measured as priced, it is."""
    from dispatch.routing import learned

    use, _ = gpu_machine
    use(0.5)
    monkeypatch.setattr(_routing._price, "seconds", lambda *args: {"numpy": 5.0, "cupy": 3.0})
    X, y = _data(1_000_000, 150)
    key = (LDA, "fit", X.size.bit_length())
    first = _routing.choose(LDA(), "fit", X, (y,))
    assert first.target == "cupy" and first.learn == key
    assert first.reason.endswith("measured first, then stock scikit-learn")
    _routing.observe(key, "cupy", 0.6)
    second = _routing.choose(LDA(), "fit", X, (y,))
    assert second.target == "cupy", second
    assert second.reason.endswith("by far, stock scikit-learn not measured")
    assert second.learn == key  # a GPU's first call may have paid one-time costs: timed once more
    kept = _routing._kept()
    _routing.forget()  # the next run reads what this one kept
    monkeypatch.setattr(learned, "earlier", lambda section: kept if section == "sklearn" else None)
    assert _routing.choose(LDA(), "fit", X, (y,)).target == "cupy"

    _routing.forget()
    monkeypatch.setattr(learned, "earlier", lambda section: None)
    assert _routing.choose(LDA(), "fit", X, (y,)).target == "cupy"
    _routing.observe(key, "cupy", 3.0)  # as priced: stock may win, and is measured
    stock = _routing.choose(LDA(), "fit", X, (y,))
    assert stock == _routing.Choice(None, f"{_routing.STOCK}: measuring the alternative", learn=key)
