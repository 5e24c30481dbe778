"""What every catalog shares: the entry record, the table parser and the catalog enums' base.

A catalog is one text table, one line per op (autoray's ``_FUNC_ALIASES`` style)::

    # name        complexity  work     cupy   torch        why (optional, after '#')
    add           LOW         map      =      add
    linalg.svd    HIGH        cubic    =      linalg.svd   # O(mn·min(m,n)) work

Columns after ``work`` are counterparts in other libraries: ``=`` means the same name,
``-`` means none. Adding an op is one line.

Every line is checked when the table is read (its cells, complexity and work kind); its entry
is made when the line is first looked up: a script uses tens of the NumPy catalog's 500 ops,
and making them all took a share of its first routed call.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping

from dispatch.base.records import Frozen
from dispatch.base.tiers import OpComplexity

__all__ = ["Catalog", "CatalogOp", "Entry", "make_enum", "parse_table"]

_COMPLEXITY = {c.name: c for c in OpComplexity}


class Entry(Frozen):
    """One catalog line."""

    __slots__ = ("name", "complexity", "work", "counterparts", "why")  # noqa: RUF023 - the fields, in order

    def __init__(self, name: str, complexity: OpComplexity, work: str, counterparts: dict[str, str] | None = None,
                 why: str = "") -> None:
        self._set(name, complexity, work, {} if counterparts is None else counterparts, why)


class Catalog(Mapping[str, Entry]):
    """A parsed table, read-only: name -> ``Entry``, in table order."""

    def __init__(self, rows: dict[str, tuple[list[str], str]], columns: tuple[str, ...]) -> None:
        self._rows = rows  # name -> (the line's cells, its comment)
        self._columns = columns
        self._made: dict[str, Entry] = {}

    def __getitem__(self, name: str) -> Entry:
        entry = self._made.get(name)
        if entry is None:
            cells, why = self._rows[name]
            counterparts = {lib: (name if other == "=" else other)
                            for lib, other in zip(self._columns, cells[3:], strict=True) if other != "-"}
            entry = self._made[name] = Entry(name, _COMPLEXITY[cells[1]], cells[2], counterparts, why.strip())
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def work(self, name: str) -> str:
        """``self[name].work``, read without making the entry."""
        return self._rows[name][0][2]


def parse_table(text: str, columns: tuple[str, ...], works: frozenset[str]) -> Catalog:
    """Parse a catalog table; ``columns`` names the counterpart columns after ``work``.

    Every line is checked: the whole table at once where it is sound (the common case, a
    share of a script's first call), line by line to name the first bad one where it is not."""
    rows: dict[str, tuple[list[str], str]] = {}
    width = 3 + len(columns)
    lines = 0
    for raw in text.splitlines():
        line, _, why = raw.partition("#")
        cells = line.split()
        if cells:
            rows[cells[0]] = (cells, why)
            lines += 1
    sound = (len(rows) == lines and all(len(cells) == width for cells, _ in rows.values())
             and {cells[1] for cells, _ in rows.values()} <= _COMPLEXITY.keys()
             and {cells[2] for cells, _ in rows.values()} <= works)
    if not sound:
        _check_lines(text, width, works)
    return Catalog(rows, columns)


def _check_lines(text: str, width: int, works: frozenset[str]) -> None:
    """``ValueError`` naming a table's first bad line."""
    seen = set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        cells = raw.partition("#")[0].split()
        if not cells:
            continue
        if len(cells) != width:
            raise ValueError(f"catalog line {lineno} has {len(cells)} cells, expected {width}: {raw!r}")
        name, complexity, work = cells[:3]
        if name in seen:
            raise ValueError(f"catalog line {lineno}: duplicate entry {name!r}")
        if complexity not in _COMPLEXITY:
            raise ValueError(f"catalog line {lineno}: unknown complexity {complexity!r}")
        if work not in works:
            raise ValueError(f"catalog line {lineno}: unknown work kind {work!r}")
        seen.add(name)


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
    enum_name: str, module: str, entries: Mapping[str, Entry], spelled: dict[str, str] | None = None
) -> type[CatalogOp]:
    """Build a catalog enum whose members are the table's entries, in table order.

    ``spelled`` overrides a member name where the rule reads badly (``ReLU`` -> ``RELU``).
    """
    spelled = spelled or {}
    members = [(spelled.get(name) or member_name(name), name) for name in entries]
    cls = CatalogOp(enum_name, members, module=module)  # type: ignore[call-overload]
    cls._entries = entries
    return cls
