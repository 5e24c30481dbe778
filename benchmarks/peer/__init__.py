"""Peer suites: NumPy's and scikit-learn's own tests, run stock and under dispatch side by side.

``python -m benchmarks.peer.numpy_suite`` and ``python -m benchmarks.peer.sklearn_suite``;
see ``README.md`` in this folder.
"""
