"""scikit-learn's checks for NumPy's own types, given dispatch's objects (``dispatch.sklearn._numpy_types``,
which ``import dispatch`` installs once scikit-learn loads): a dispatch ``RandomState``
is handed over as the NumPy ``RandomState`` inside it, so the draws on either side continue one
stream exactly as NumPy's one object's; parameter validation and ``ParameterGrid`` take
dispatch arrays as NumPy's; NumPy's own objects, and everything once uninstalled, as before.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.model_selection import ParameterGrid
from sklearn.utils import _param_validation, shuffle, validation
from sklearn.utils import _random as sklearn_random  # compiled: its own binding of check_random_state
from sklearn.utils.class_weight import compute_class_weight

import dispatch
from dispatch.sklearn import _numpy_types

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def uninstalled():
    """Not installed (an in-process ``dispatch run`` of another test may have installed it), and
    as it was afterwards."""
    was = _numpy_types.uninstall()
    try:
        yield
    finally:
        _numpy_types.uninstall()
        if was:
            _numpy_types.install()


@pytest.fixture
def installed(uninstalled):
    assert _numpy_types.install()


def _check(seed):
    """``check_random_state`` as a scikit-learn module reads it now (its name in the module)."""
    return sys.modules["sklearn.utils.validation"].check_random_state(seed)


def test_a_random_state_is_handed_over_as_the_numpy_one_inside_it(installed):
    rs = dispatch.random.RandomState(0)
    assert _check(rs) is rs._numpy
    assert _check(7).randint(1000) == np.random.RandomState(7).randint(1000)  # NumPy's objects as before
    ref = np.random.RandomState(0)
    assert _check(ref) is ref
    assert _check(None) is np.random.mtrand._rand and _check(dispatch.random) is np.random.mtrand._rand


def test_the_stream_continues_across_the_boundary_as_numpys_one_object(installed):
    """scikit-learn's draws from the script's RandomState (its Python and its compiled code) and the
    script's own draws interleave exactly as with NumPy's RandomState."""
    ref, rs = np.random.RandomState(3), dispatch.random.RandomState(3)
    for state in (ref, rs):
        state.rand(2)
    assert shuffle(np.arange(10), random_state=rs).tolist() == shuffle(np.arange(10), random_state=ref).tolist()
    np.testing.assert_array_equal(np.asarray(rs.normal(size=4)), ref.normal(size=4))
    np.testing.assert_array_equal(sklearn_random.sample_without_replacement(50, 5, random_state=rs),
                                  sklearn_random.sample_without_replacement(50, 5, random_state=ref))
    np.testing.assert_array_equal(np.asarray(rs.randint(100, size=6)), ref.randint(100, size=6))


def test_a_generator_is_refused_as_numpys_is(installed):
    """scikit-learn takes no Generator as a random_state: dispatch's is refused with NumPy's words."""
    rng = dispatch.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^Generator\(PCG64\) at 0x[0-9A-F]+ cannot be used to seed"):
        _check(rng)
    satisfied = _param_validation._InstancesOf(np.random.RandomState).is_satisfied_by
    assert not satisfied(rng) and satisfied(dispatch.random.RandomState(0))


def test_validation_takes_dispatch_objects_as_the_numpy_objects_they_stand_for(installed):
    of = _param_validation._InstancesOf
    a = dispatch.arange(3)
    assert of(np.ndarray).is_satisfied_by(a) and not of(list).is_satisfied_by(a)
    assert of(np.random.Generator).is_satisfied_by(dispatch.random.default_rng(1))
    y = np.array([0, 1, 1, 2, 2, 2])
    np.testing.assert_array_equal(compute_class_weight("balanced", classes=dispatch.unique(dispatch.asarray(y)), y=y),
                                  compute_class_weight("balanced", classes=np.unique(y), y=y))


def test_a_grids_dispatch_arrays_are_numpys_in_a_copy(installed):
    grid = {"C": dispatch.logspace(-1, 1, 3), "kernel": ["rbf"]}
    points = list(ParameterGrid(grid))
    assert points == list(ParameterGrid({"C": np.logspace(-1, 1, 3), "kernel": ["rbf"]}))
    assert all(type(p["C"]) is np.float64 for p in points)
    assert isinstance(grid["C"], dispatch.ndarray) and type(grid["C"]) is not np.ndarray  # the caller's own dict
    plain = [{"a": [1, 2]}]
    assert ParameterGrid(plain).param_grid is plain  # nothing of dispatch's: as given
    with pytest.raises(ValueError, match="one-dimensional"):  # NumPy's array's checks, as NumPy's
        ParameterGrid({"a": dispatch.ones((2, 2))})


def test_install_is_once_and_uninstall_puts_back_exactly(uninstalled):
    # scikit-learn's own (``import dispatch`` installed it as scikit-learn loaded; the fixture took it out)
    check, satisfied = validation.check_random_state, _param_validation._InstancesOf.is_satisfied_by
    grid_init = ParameterGrid.__init__
    assert _numpy_types.install() and not _numpy_types.install() and _numpy_types.installed()
    assert _param_validation._InstancesOf.is_satisfied_by is not satisfied
    assert _numpy_types.uninstall() and not _numpy_types.uninstall() and not _numpy_types.installed()
    assert _param_validation._InstancesOf.is_satisfied_by is satisfied
    assert ParameterGrid.__init__ is grid_init
    # the names it replaced hold scikit-learn's own again (a module loaded while it was installed
    # keeps what it imported then: for NumPy's objects the same function's answers)
    assert validation.check_random_state is check and sys.modules["sklearn.utils"].check_random_state is check
    with pytest.raises(ValueError, match="cannot be used to seed"):
        _check(dispatch.random.RandomState(0))


def test_a_grid_module_loaded_later_is_patched_as_it_loads():
    """scikit-learn imported without model_selection: its ParameterGrid is patched when it loads."""
    code = textwrap.dedent("""
        import sys
        import sklearn.utils
        import dispatch
        from dispatch.sklearn import _numpy_types
        assert "sklearn.model_selection._search" not in sys.modules
        _numpy_types.install()
        from sklearn.model_selection import ParameterGrid
        print(list(ParameterGrid({"a": dispatch.arange(2)})))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert (done.returncode, done.stdout) == (0, "[{'a': np.int64(0)}, {'a': np.int64(1)}]\n"), done.stderr


IDIOMS = """
from sklearn.cluster import KMeans
from sklearn.datasets import load_iris
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, train_test_split
X, y = load_iris(return_X_y=True)
rs = np.random.RandomState(0)
print(KMeans(3, n_init=2, random_state=rs).fit(X).inertia_)
print(GridSearchCV(Ridge(), {"alpha": np.logspace(-3, 3, 7)}, cv=3).fit(X, y).best_params_)
print(train_test_split(X, y, random_state=rs)[3][:5], rs.randint(1000))
"""


@pytest.mark.parametrize("order", ["sklearn after dispatch", "sklearn before dispatch"])
def test_import_dispatch_as_np_hands_scikit_learn_numpys_objects(order):
    """``import dispatch as np`` in a script run by ``python``: scikit-learn, loaded after dispatch
    or before it, takes the script's ``RandomState`` and ``np.logspace`` grid as NumPy's, with
    NumPy's output (the stream continuing after scikit-learn's draws)."""
    first = ("import sklearn\n" if order.endswith("before dispatch") else "") + "import dispatch as np\n"
    plain = subprocess.run([sys.executable, "-c", "import numpy as np\n" + IDIOMS], capture_output=True, text=True,
                           cwd=REPO, check=True)
    routed = subprocess.run([sys.executable, "-c", first + IDIOMS], capture_output=True, text=True, cwd=REPO)
    assert (routed.returncode, routed.stdout) == (0, plain.stdout), routed.stderr[-800:]
