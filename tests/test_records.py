"""The call path's value classes (``dispatch.base.records``): what a dataclass would give them."""

from __future__ import annotations

import copy
import pickle

import pytest

from dispatch.base.catalog import Entry
from dispatch.base.records import Frozen, Record
from dispatch.base.settings import Env
from dispatch.base.tiers import OpComplexity
from dispatch.routing.history import Stat


class Point(Record):
    __slots__ = ("x", "y")

    def __init__(self, x: float, y: float = 0.0) -> None:
        self.x = x
        self.y = y


class Key(Frozen):
    __slots__ = ("name", "size")

    def __init__(self, name: str, size: int) -> None:
        self._set(name, size)


def test_a_record_reads_and_compares_as_a_dataclass():
    assert repr(Point(1.0, 2)) == "Point(x=1.0, y=2)"
    assert Point(1.0, 2) == Point(1.0, 2) and Point(1.0, 2) != Point(1.0, 3)
    assert Point(1.0) != Key("a", 1) and Point(1.0).__eq__((1.0, 0.0)) is NotImplemented
    p = Point(1.0)
    p.y = 5.0  # mutable
    assert p == Point(1.0, 5.0)
    with pytest.raises(TypeError, match="unhashable"):
        hash(p)
    with pytest.raises(AttributeError):
        p.z = 1  # no field of that name: its slots are its fields


def test_a_frozen_record_is_hashable_and_refuses_assignment():
    k = Key("add", 3)
    assert k == Key("add", 3) and hash(k) == hash(Key("add", 3)) and {k: 1}[Key("add", 3)] == 1
    assert repr(k) == "Key(name='add', size=3)"
    with pytest.raises(AttributeError, match="frozen"):
        k.size = 4
    with pytest.raises(AttributeError, match="frozen"):
        del k.name
    assert k.size == 3
    assert copy.copy(k) == k and pickle.loads(pickle.dumps(k)) == k


def test_the_converted_classes_keep_their_defaults_and_values():
    assert Env() == Env(backend="auto", trace=False, pure_python=False, heap="keep", memory_fraction=0.5,
                        chunk_bytes=None, exact=False)
    assert Env(backend="numpy") != Env() and hash(Env()) == hash(Env())
    entry = Entry("add", OpComplexity.LOW, "map")
    assert entry.counterparts == {} and entry.why == "" and entry == Entry("add", OpComplexity.LOW, "map", {}, "")
    assert Stat(0.5, 2) == Stat(0.5, 2) and repr(Stat(0.5, 2)) == "Stat(seconds=0.5, samples=2)"
    assert pickle.loads(pickle.dumps(Stat(0.5, 2))) == Stat(0.5, 2)
