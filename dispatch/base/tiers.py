"""The seed's vocabulary: compute tiers, operation complexity and the MoE threshold table.

Pure Python: the op catalog, the converters and the selector (``dispatch.routing.selector``)
share it without pulling in any array library.
"""

from __future__ import annotations

import enum
import numbers

from dispatch.base.records import Frozen

__all__ = ["Backend", "MoeThresholds", "OpComplexity"]


class Backend(enum.Enum):
    """The seed's compute tiers. A concrete engine ("target") is chosen per tier later."""

    SCALAR = "Scalar"
    SIMD = "SIMD"
    GPU = "GPU"

    def __str__(self) -> str:
        return self.value


@enum.unique
class OpComplexity(enum.IntEnum):
    """How much work an operation does per element of its input, ordered LOW < MEDIUM < HIGH.

    LOW: element-wise and shape ops, O(n), memory-bound.
    MEDIUM: reductions, dot of vectors, cumulative ops, O(n) with more arithmetic per byte.
    HIGH: matmul, solve, decompositions, FFT, sorting: superlinear work.
    """

    LOW = 0
    MEDIUM = 1
    HIGH = 2

    def __str__(self) -> str:
        return self.name.capitalize()


class MoeThresholds(Frozen):
    """Element counts above which a tier is chosen, per complexity (``None``: never).

    ``select_with_moe`` picks GPU when ``n > gpu[c]``, else SIMD when ``n > simd[c]``,
    else SCALAR. The defaults are the seed's table. Frozen and hashable (a record of
    ``dispatch.base.records``, not a dataclass: the seed policy makes one at the first call).
    """

    __slots__ = ("simd", "gpu")  # noqa: RUF023 - the fields, in order

    def __init__(self, simd: tuple[int | None, int | None, int | None] = (1_000_000, 10_000, 1_000),
                 gpu: tuple[int | None, int | None, int | None] = (None, 100_000, 10_000)) -> None:
        for field, values in (("simd", simd), ("gpu", gpu)):
            if not isinstance(values, tuple) or len(values) != len(OpComplexity):
                raise TypeError(f"MoeThresholds.{field} must be a tuple of {len(OpComplexity)} entries")
            for value in values:
                if value is not None:
                    _check_count(value, f"MoeThresholds.{field} entry")
        self._set(simd, gpu)

    def with_tier(self, complexity: OpComplexity, *, simd: int | None, gpu: int | None) -> MoeThresholds:
        """A copy with one complexity's thresholds replaced."""
        complexity = _check_complexity(complexity)
        s, g = list(self.simd), list(self.gpu)
        s[complexity], g[complexity] = simd, gpu
        return MoeThresholds(simd=tuple(s), gpu=tuple(g))

    def to_dict(self) -> dict[str, dict[str, int | None]]:
        return {c.name: {"simd": self.simd[c], "gpu": self.gpu[c]} for c in OpComplexity}

    @classmethod
    def from_dict(cls, table: dict[str, dict[str, int | None]]) -> MoeThresholds:
        try:
            simd = tuple(table[c.name]["simd"] for c in OpComplexity)
            gpu = tuple(table[c.name]["gpu"] for c in OpComplexity)
        except KeyError as exc:
            raise ValueError(f"MoE threshold table is missing {exc}") from None
        return cls(simd=simd, gpu=gpu)


def _check_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}")
    value = int(value)
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return value


def _check_complexity(value: object) -> OpComplexity:
    if not isinstance(value, OpComplexity):
        raise TypeError(f"complexity must be an OpComplexity, not {type(value).__name__}")
    return value
