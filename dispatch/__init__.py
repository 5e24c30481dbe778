"""dispatch: run NumPy, scikit-learn and PyTorch code on the fastest backend for each call."""

from __future__ import annotations

from dispatch.selector import Backend, BackendSelector, MoeThresholds, OpComplexity

__all__ = ["Backend", "BackendSelector", "MoeThresholds", "OpComplexity"]
