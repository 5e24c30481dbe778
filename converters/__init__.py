"""Catalogs of NumPy ops, scikit-learn algorithms and PyTorch operations, each tagged with
an ``OpComplexity``, and the converters that classify ops and recommend a backend tier.

>>> from converters import NumPyConverter, NumPyOp
>>> str(NumPyConverter().recommend_backend(NumPyOp.DOT, 50_000))
'GPU'

This package is pure data and small functions: it imports no array library.
"""

from __future__ import annotations

import functools
from typing import Any

from converters._converter import Converter
from converters.pytorch_operations import PYTORCH_CATALOG, PyTorchOperation
from converters.sklearn_algorithms import SKLEARN_CATALOG, SklearnAlgorithm
from dispatch.base.catalog import CatalogOp, Entry
from dispatch.base.numpy_catalog import NUMPY_CATALOG, NumPyOp
from dispatch.base.tiers import Backend, OpComplexity

__all__ = [
    "NUMPY_CATALOG",
    "PYTORCH_CATALOG",
    "SKLEARN_CATALOG",
    "Backend",
    "CatalogOp",
    "Converter",
    "Entry",
    "NumPyConverter",
    "NumPyOp",
    "OpComplexity",
    "PyTorchConverter",
    "PyTorchOperation",
    "SklearnAlgorithm",
    "SklearnConverter",
]

# Libraries whose namespaces mirror NumPy's: their functions name the same catalog entry.
_NUMPY_LIKE_ROOTS = ("numpy", "dispatch", "cupy")
_NUMPY_SUBMODULES = ("linalg", "fft", "random")
_RANDOM_STATE_TYPES = ("RandomState", "Generator")


class NumPyConverter(Converter):
    """Classify NumPy ops: ``"add"``, ``"linalg.svd"``, ``np.add`` or ``NumPyOp.ADD``."""

    catalog = NumPyOp
    library = "numpy"

    def _name_of_object(self, obj: Any) -> str | None:
        name = getattr(obj, "__name__", None)
        if not isinstance(name, str):
            return None
        owner = getattr(obj, "__self__", None)  # np.random.normal is a bound RandomState method
        if type(owner).__name__ in _RANDOM_STATE_TYPES:
            return f"random.{name}"
        parts = (getattr(obj, "__module__", None) or "").split(".")
        if parts[0] not in _NUMPY_LIKE_ROOTS:
            return None
        public = [p for p in parts[1:] if p in _NUMPY_SUBMODULES]
        return ".".join([*public[:1], name])


class SklearnConverter(Converter):
    """Classify scikit-learn estimators: ``"PCA"``, ``sklearn.decomposition.PCA``, an instance."""

    catalog = SklearnAlgorithm
    library = "scikit-learn"

    def _name_of_object(self, obj: Any) -> str | None:
        cls = obj if isinstance(obj, type) else type(obj)
        return cls.__name__ if cls.__module__.split(".")[0] in ("sklearn", "cuml") else None

    def array_api_support(self, op: Any) -> bool:
        """Whether scikit-learn's Array API dispatch supports the estimator, asked of the
        installed scikit-learn (its estimator tags), so the answer never goes stale."""
        from sklearn.utils import get_tags  # scikit-learn is optional: imported on use

        return bool(get_tags(self.estimator_class(op)()).array_api_support)

    def estimator_class(self, op: Any) -> type:
        """The scikit-learn class of ``op`` (imports scikit-learn)."""
        import importlib

        module, _, name = self.lookup(op).entry.counterparts["sklearn"].rpartition(".")
        return getattr(importlib.import_module(module), name)


class PyTorchConverter(Converter):
    """Classify PyTorch operations: ``"Linear"``, ``torch.nn.Linear``, ``torch.matmul``..."""

    catalog = PyTorchOperation
    library = "pytorch"

    def _name_of_object(self, obj: Any) -> str | None:
        root = (getattr(obj, "__module__", None) or type(obj).__module__ or "").split(".")[0]
        if root != "torch":
            return None
        if not callable(obj) or (not isinstance(obj, type) and hasattr(type(obj), "forward")):
            obj = type(obj)  # a module or optimizer instance names its class
        names = _torch_names()
        for key in (getattr(obj, "__qualname__", None), getattr(obj, "__name__", None)):
            if key in names:
                return names[key]
        return None


@functools.cache
def _torch_names() -> dict[str, str]:
    """``{"Linear": "Linear", "Optimizer.step": "OptimizerStep", ...}``: the qualified name
    each catalog object has in torch, to the catalog entry that names it."""
    names: dict[str, str] = {}
    for entry in PYTORCH_CATALOG.values():
        path = entry.counterparts.get("torch")
        if path:
            parts = path.split(".")
            # A class is named by its last part; a method by class and method.
            qual = ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]
            names.setdefault(qual, entry.name)
    return names
