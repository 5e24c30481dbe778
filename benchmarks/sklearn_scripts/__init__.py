"""scikit-learn scripts as users write them, for the cold-start benchmark (``benchmarks/sklearn_cold.py``).

Each is ``python FILE [ROWS] [--accelerate]``: NumPy data drawn from ``default_rng(0)``, one
estimator fitted and used once, a one-line summary printed. ``--accelerate`` calls
``dispatch.sklearn.accelerate()`` first; ``python -m dispatch run FILE [ROWS]`` accelerates it
without a change to the script.
"""
