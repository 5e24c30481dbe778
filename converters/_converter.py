"""The converters' base: classify a library's ops by its catalog and recommend a tier."""

from __future__ import annotations

import difflib
from typing import Any, ClassVar

from dispatch.base.catalog import CatalogOp
from dispatch.base.tiers import Backend, OpComplexity
from dispatch.routing.selector import BackendSelector

__all__ = ["Converter"]


class Converter:
    """Classify a library's ops and recommend a tier for them.

    ``op`` may be a catalog member, its library name or the library object itself.
    Subclasses set ``catalog`` and implement ``_name_of_object``.
    """

    catalog: ClassVar[type[CatalogOp]]
    library: ClassVar[str]

    def __init__(self, selector: BackendSelector | None = None) -> None:
        self.selector = selector if selector is not None else BackendSelector()

    @classmethod
    def for_this_machine(cls) -> Converter:
        """A converter whose recommendations come from this machine's calibration (the seed's
        table where the machine is not calibrated yet)."""
        return cls(BackendSelector.from_calibration())

    def lookup(self, op: Any) -> CatalogOp:
        """The catalog member for ``op``; ``KeyError`` naming the closest known names."""
        if isinstance(op, self.catalog):
            return op
        if isinstance(op, CatalogOp):
            raise KeyError(f"{op!r} is a {type(op).__name__}, not a {self.catalog.__name__}")
        name = op if isinstance(op, str) else self._name_of_object(op)
        if name is not None:
            entries = self.catalog._entries  # type: ignore[attr-defined]
            if name in entries:
                return self.catalog(name)
            member = self.catalog.__members__.get(name)
            if member is not None:
                return member
        shown = name if name is not None else repr(op)
        close = difflib.get_close_matches(str(shown), list(self.catalog._entries), n=3, cutoff=0.6)  # type: ignore[attr-defined]
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise KeyError(f"unknown {self.library} op {shown!r}{hint}")

    def _name_of_object(self, obj: Any) -> str | None:
        raise NotImplementedError

    def complexity(self, op: Any) -> OpComplexity:
        """The ``OpComplexity`` of ``op``."""
        return self.lookup(op).complexity()

    def recommend_backend(self, op: Any, n: int) -> Backend:
        """The tier the selector's MoE table recommends for ``op`` on ``n`` elements."""
        return self.selector.select_with_moe(self.complexity(op), n)

    def counterpart(self, op: Any, library: str) -> str | None:
        """What to call instead in ``library`` (e.g. ``"torch"``), or ``None`` if nothing."""
        return self.lookup(op).entry.counterparts.get(library)

    def __iter__(self):
        return iter(self.catalog)

    def __len__(self) -> int:
        return len(self.catalog)
