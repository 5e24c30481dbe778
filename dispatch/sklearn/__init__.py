"""Accelerate existing scikit-learn code with one line, or none.

>>> import dispatch.sklearn
>>> dispatch.sklearn.accelerate()          # every estimator, whatever was imported before
>>> with dispatch.sklearn.accelerated():   # or only inside a block
...     ...
>>> dispatch.sklearn.unaccelerate()        # the original methods, exactly

Each call of an estimator method (``fit``, ``predict``, ``transform``...) is routed on its
own by ``choose`` (``dispatch/sklearn/_routing.py``): stock scikit-learn on NumPy, or
scikit-learn's own Array API code path on a GPU (CuPy, torch on CUDA / MPS) or, when forced,
torch on the CPU. Outputs have the type the caller gave; fitted estimators hold NumPy arrays
only, so they pickle as plain scikit-learn objects. ``python -m dispatch run`` needs only
``accelerate()``. scikit-learn is imported when ``accelerate`` runs, never by ``import dispatch``.
"""

from __future__ import annotations

from dispatch.sklearn._patch import accelerate, accelerated, is_accelerated, patched, unaccelerate
from dispatch.sklearn._routing import Choice, choose, forget, unsupported

__all__ = ["Choice", "accelerate", "accelerated", "choose", "forget", "is_accelerated", "patched", "unaccelerate",
           "unsupported"]
