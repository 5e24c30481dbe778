"""Benchmarks: the workload suite (``benchmarks.workloads``) and the harness that runs it."""
