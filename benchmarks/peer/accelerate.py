"""pytest plugin: every scikit-learn estimator routed through ``dispatch.sklearn.accelerate()``.

Loaded with ``-p benchmarks.peer.accelerate`` before any conftest, so scikit-learn's own
tests run exactly as a user's program after the one line would.
"""

import dispatch.sklearn

dispatch.sklearn.accelerate()
