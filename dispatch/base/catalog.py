"""What every catalog shares: the entry record, the table parser and the converter base.

A catalog is one text table, one line per op (autoray's ``_FUNC_ALIASES`` style)::

    # name        complexity  work     cupy   torch        why (optional, after '#')
    add           LOW         map      =      add
    linalg.svd    HIGH        cubic    =      linalg.svd   # O(mn·min(m,n)) work

Columns after ``work`` are counterparts in other libraries: ``=`` means the same name,
``-`` means none. Adding an op is one line.
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dispatch.routing.selector import Backend, BackendSelector, OpComplexity

__all__ = ["CatalogOp", "Converter", "Entry", "parse_table"]

_COMPLEXITY = {c.name: c for c in OpComplexity}


@dataclass(frozen=True)
class Entry:
    """One catalog line."""

    name: str
    complexity: OpComplexity
    work: str
    counterparts: dict[str, str] = field(default_factory=dict)
    why: str = ""


def parse_table(text: str, columns: tuple[str, ...], works: frozenset[str]) -> dict[str, Entry]:
    """Parse a catalog table; ``columns`` names the counterpart columns after ``work``."""
    entries: dict[str, Entry] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line, _, why = raw.partition("#")
        cells = line.split()
        if not cells:
            continue
        if len(cells) != 3 + len(columns):
            raise ValueError(f"catalog line {lineno} has {len(cells)} cells, expected {3 + len(columns)}: {raw!r}")
        name, complexity, work, *others = cells
        if name in entries:
            raise ValueError(f"catalog line {lineno}: duplicate entry {name!r}")
        if complexity not in _COMPLEXITY:
            raise ValueError(f"catalog line {lineno}: unknown complexity {complexity!r}")
        if work not in works:
            raise ValueError(f"catalog line {lineno}: unknown work kind {work!r}")
        counterparts = {
            lib: (name if other == "=" else other) for lib, other in zip(columns, others, strict=True) if other != "-"
        }
        entries[name] = Entry(name, _COMPLEXITY[complexity], work, counterparts, why.strip())
    return entries


def member_name(library_name: str) -> str:
    """``"linalg.svd"`` -> ``"LINALG_SVD"``; ``"StandardScaler"`` -> ``"STANDARD_SCALER"``."""
    out = []
    for i, ch in enumerate(library_name):
        if ch == ".":
            out.append("_")
            continue
        prev = library_name[i - 1] if i else ""
        nxt = library_name[i + 1] if i + 1 < len(library_name) else ""
        if ch.isupper() and prev and (prev.islower() or prev.isdigit() or (prev.isupper() and nxt.islower())):
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


class CatalogOp(enum.Enum):
    """Base of the catalog enums: a member's value is its library name."""

    @property
    def entry(self) -> Entry:
        return type(self)._entries[self.value]  # type: ignore[attr-defined]

    def complexity(self) -> OpComplexity:
        """The member's ``OpComplexity`` (LOW / MEDIUM / HIGH)."""
        return self.entry.complexity

    def __str__(self) -> str:
        return self.value


def make_enum(
    enum_name: str, module: str, entries: dict[str, Entry], spelled: dict[str, str] | None = None
) -> type[CatalogOp]:
    """Build a catalog enum whose members are the table's entries, in table order.

    ``spelled`` overrides a member name where the rule reads badly (``ReLU`` -> ``RELU``).
    """
    spelled = spelled or {}
    members = [(spelled.get(name) or member_name(name), name) for name in entries]
    cls = CatalogOp(enum_name, members, module=module)  # type: ignore[call-overload]
    cls._entries = entries
    return cls


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
