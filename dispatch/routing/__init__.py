"""Routing: where a call runs. The router and its policies, cost models, calibration,
history and trials. Imports ``dispatch.base`` and ``dispatch.targets`` only."""
