"""Routing: where a call runs. The router and its policies, cost models, calibration,
history and the live regions' plans. Imports ``dispatch.base`` and ``dispatch.targets`` only."""
