"""The bottom layer: ops and their catalog, devices, call inputs, process state, the tiers'
vocabulary and the cluster connection. Imports nothing else of dispatch."""
