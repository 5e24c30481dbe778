"""The seed's backend selector: the cold-start heuristic of the router and of the migration
tools, over the vocabulary of ``dispatch.base.tiers`` (re-exported here).

The formulas are the seed's, kept exactly (tests pin them). Note what they are: the
``select_backend`` rule is a compute-to-transfer *intensity* test, not a comparison of
times, so with its own defaults a square matmul goes to the GPU only above
``n = 6 * ratio * gpu / pcie = 18_750`` (1024**3 stays on SIMD, although the seed's book
chapter says GPU). The calibrated router compares estimated total times instead.
"""

from __future__ import annotations

import math
import numbers

from dispatch.base.tiers import Backend, MoeThresholds, OpComplexity, _check_complexity, _check_count

__all__ = ["Backend", "BackendSelector", "MoeThresholds", "OpComplexity"]


class BackendSelector:
    """The seed's cost model and MoE router (``batuta::backend::BackendSelector``).

    Instances are immutable; the ``with_*`` builders return a configured copy.
    """

    __slots__ = ("_gpu_flops", "_min_dispatch_ratio", "_pcie_bandwidth", "_thresholds")

    def __init__(
        self,
        pcie_bandwidth: float = 32e9,
        gpu_gflops: float = 20e12,
        min_dispatch_ratio: float = 5.0,
        thresholds: MoeThresholds | None = None,
    ) -> None:
        self._pcie_bandwidth = _check_positive(pcie_bandwidth, "PCIe bandwidth")
        self._gpu_flops = _check_positive(gpu_gflops, "GPU throughput")
        self._min_dispatch_ratio = _check_positive(min_dispatch_ratio, "minimum dispatch ratio")
        if thresholds is None:
            thresholds = MoeThresholds()
        elif not isinstance(thresholds, MoeThresholds):
            raise TypeError(f"thresholds must be a MoeThresholds, not {type(thresholds).__name__}")
        self._thresholds = thresholds

    # Configuration -------------------------------------------------------------------

    @property
    def pcie_bandwidth(self) -> float:
        """Host-to-device bandwidth in bytes per second (default 32e9, PCIe 4.0 x16)."""
        return self._pcie_bandwidth

    @property
    def gpu_gflops(self) -> float:
        """GPU throughput in FLOP/s (default 20e12). The seed names it GFLOPS; it is FLOP/s."""
        return self._gpu_flops

    @property
    def min_dispatch_ratio(self) -> float:
        """Compute must exceed this many times the transfer time to go to the GPU (default 5)."""
        return self._min_dispatch_ratio

    @property
    def thresholds(self) -> MoeThresholds:
        return self._thresholds

    def _copy(self, **changes: object) -> BackendSelector:
        args = {
            "pcie_bandwidth": self._pcie_bandwidth,
            "gpu_gflops": self._gpu_flops,
            "min_dispatch_ratio": self._min_dispatch_ratio,
            "thresholds": self._thresholds,
        }
        args.update(changes)
        return BackendSelector(**args)

    def with_pcie_bandwidth(self, bandwidth: float) -> BackendSelector:
        """A copy with another PCIe bandwidth (bytes/s, must be > 0)."""
        return self._copy(pcie_bandwidth=bandwidth)

    def with_gpu_gflops(self, gflops: float) -> BackendSelector:
        """A copy with another GPU throughput (FLOP/s, must be > 0)."""
        return self._copy(gpu_gflops=gflops)

    def with_min_dispatch_ratio(self, ratio: float) -> BackendSelector:
        """A copy with another dispatch ratio (must be > 0)."""
        return self._copy(min_dispatch_ratio=ratio)

    def with_thresholds(self, thresholds: MoeThresholds) -> BackendSelector:
        """A copy that routes ``select_with_moe`` by another threshold table."""
        return self._copy(thresholds=thresholds)

    @classmethod
    def from_calibration(cls, calibration: object | None = None) -> BackendSelector:
        """A selector whose MoE table is derived from a calibration (this machine's stored one
        by default), so ``select_with_moe`` and the converters' ``recommend_backend`` speak for
        the machine that was measured. With no calibration, the seed's defaults.

        For each complexity, a representative op (LOW: add, MEDIUM: sum, HIGH: a square matmul)
        is priced on every calibrated target: SIMD from the first size at which a multi-threaded
        CPU engine beats NumPy, GPU from the first size at which a GPU, paying the transfer of
        host data, beats every CPU engine. A tier that never wins is ``None``. The PCIe bandwidth
        and GPU rate become the measured ones.
        """

        # imported here: ``import dispatch`` loads this module, and a calibration is read only when asked for
        from dispatch.routing import calibration as calibration_module
        from dispatch.routing.cost import derive_selector

        cal = calibration if calibration is not None else calibration_module.load()
        if cal is None:
            return cls()
        if isinstance(cal, (str, bytes)) or hasattr(cal, "__fspath__"):
            cal = calibration_module.load(cal)
        return derive_selector(cls, cal)

    def __repr__(self) -> str:
        return (
            f"BackendSelector(pcie_bandwidth={self._pcie_bandwidth:g}, gpu_gflops={self._gpu_flops:g}, "
            f"min_dispatch_ratio={self._min_dispatch_ratio:g}, thresholds={self._thresholds})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BackendSelector):
            return NotImplemented
        return (
            self._pcie_bandwidth == other._pcie_bandwidth
            and self._gpu_flops == other._gpu_flops
            and self._min_dispatch_ratio == other._min_dispatch_ratio
            and self._thresholds == other._thresholds
        )

    __hash__ = None  # type: ignore[assignment]

    # The seed's rules ----------------------------------------------------------------

    def select_backend(self, data_bytes: int, flops: int) -> Backend:
        """GPU iff ``flops / gpu > ratio * data_bytes / pcie``, else SIMD (the 5x rule)."""
        transfer_s = _check_count(data_bytes, "data_bytes") / self._pcie_bandwidth
        compute_s = _check_count(flops, "flops") / self._gpu_flops
        return Backend.GPU if compute_s > self._min_dispatch_ratio * transfer_s else Backend.SIMD

    def select_for_matmul(self, m: int, n: int, k: int) -> Backend:
        """(m x k) @ (k x n) in float32: bytes = (mk + kn + mn) * 4, flops = 2mnk."""
        m, n, k = (_check_count(v, name) for v, name in ((m, "m"), (n, "n"), (k, "k")))
        return self.select_backend((m * k + k * n + m * n) * 4, 2 * m * n * k)

    def select_for_vector_op(self, n: int, ops_per_element: int) -> Backend:
        """Two float32 inputs and one output: bytes = 12n, flops = n * ops_per_element."""
        n = _check_count(n, "n")
        return self.select_backend(n * 3 * 4, n * _check_count(ops_per_element, "ops_per_element"))

    def select_for_elementwise(self, n: int) -> Backend:
        """Memory-bound: SIMD above one million elements, else SCALAR; never GPU."""
        return Backend.SIMD if _check_count(n, "n") > 1_000_000 else Backend.SCALAR

    def select_with_moe(self, complexity: OpComplexity, data_size: int) -> Backend:
        """Route by complexity and element count through the threshold table."""
        c = _check_complexity(complexity)
        n = _check_count(data_size, "data_size")
        gpu, simd = self._thresholds.gpu[c], self._thresholds.simd[c]
        if gpu is not None and n > gpu:
            return Backend.GPU
        if simd is not None and n > simd:
            return Backend.SIMD
        return Backend.SCALAR


# Validation: the seed asserts; a Python API raises the exception NumPy users expect.


def _check_positive(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, not {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a finite number > 0, got {value!r}")
    return value
