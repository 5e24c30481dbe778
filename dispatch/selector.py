"""The seed's backend selector: tiers, operation complexity and the MoE threshold table
(public home of ``dispatch.routing.selector`` and ``dispatch.base.tiers``)."""

from dispatch.routing.selector import Backend, BackendSelector, MoeThresholds, OpComplexity

__all__ = ["Backend", "BackendSelector", "MoeThresholds", "OpComplexity"]
