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

import importlib
from typing import Any

__all__ = ["Choice", "accelerate", "accelerated", "choose", "forget", "is_accelerated", "patched", "unaccelerate",
           "unsupported"]

# name -> its module, loaded at the name's first use: ``dispatch.sklearn._numpy_types``, which
# ``import dispatch`` installs as scikit-learn loads, needs neither the accelerator nor the router
_WHERE = {"accelerate": "_patch", "accelerated": "_patch", "is_accelerated": "_patch", "patched": "_patch",
          "unaccelerate": "_patch", "Choice": "_routing", "choose": "_routing", "forget": "_routing",
          "unsupported": "_routing"}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'dispatch.sklearn' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(f"dispatch.sklearn.{module}"), name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
