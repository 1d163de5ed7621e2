"""A typed database: named tables of dataclass records, each with a key field.

Records are checked against their dataclass's field types when added (a generator bug shows
at once, not as a puzzling reward). Two databases compare with ``==`` (the judge compares the
final state with the goal state); :meth:`Database.diff` names what differs, for debugging.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import json
import types
import typing
from typing import Any, Generic, Iterator, TypeVar

R = TypeVar("R")


class Table(Generic[R]):
    """Records of one dataclass type by key."""

    def __init__(self, record: type[R], key: str) -> None:
        if not dataclasses.is_dataclass(record):
            raise TypeError(f"table records must be dataclasses, got {record!r}")
        if key not in {f.name for f in dataclasses.fields(record)}:
            raise TypeError(f"{record.__name__} has no key field {key!r}")
        self.record, self.key = record, key
        self.rows: dict[str, R] = {}

    def add(self, row: R) -> R:
        if type(row) is not self.record:
            raise TypeError(f"table of {self.record.__name__} got a {type(row).__name__}")
        check_types(row)
        key = getattr(row, self.key)
        if key in self.rows:
            raise KeyError(f"{self.record.__name__} {key!r} is already in the table")
        self.rows[key] = row
        return row

    def get(self, key: str) -> R | None:
        return self.rows.get(key)

    def __getitem__(self, key: str) -> R:
        return self.rows[key]

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __iter__(self) -> Iterator[R]:
        return iter(self.rows.values())

    def __len__(self) -> int:
        return len(self.rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Table) and self.record is other.record and self.rows == other.rows


class Database:
    """Named tables: ``db = Database(orders=Table(Order, "order_id"))``; ``db.orders["#W1"]``."""

    def __init__(self, **tables: Table[Any]) -> None:
        self.tables = tables

    def __getattr__(self, name: str) -> Table[Any]:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(f"the database has no table {name!r}; tables: {', '.join(tables)}")

    def copy(self) -> "Database":
        return copy.deepcopy(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Database) and self.tables == other.tables

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Plain JSON-able data: ``{table: {key: record as a dict}}``."""
        return {name: {k: dataclasses.asdict(r) for k, r in t.rows.items()} for name, t in self.tables.items()}

    def diff(self, other: "Database", limit: int = 20) -> list[str]:
        """Where *self* and *other* differ, as ``table/key.field`` paths (at most *limit*)."""
        out: list[str] = []
        mine, theirs = self.snapshot(), other.snapshot()
        for name in sorted(set(mine) | set(theirs)):
            a, b = mine.get(name, {}), theirs.get(name, {})
            for key in sorted(set(a) | set(b)):
                if key not in a or key not in b:
                    out.append(f"{name}/{key} {'missing' if key not in a else 'extra'}")
                    continue
                out += [f"{name}/{key}.{f}" for f in a[key] if a[key][f] != b[key].get(f)]
        return out[:limit]


def as_json(record: Any) -> str:
    """A record (or list of records) as compact JSON: what read tools show the agent."""
    def plain(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj):
            return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        if isinstance(obj, (list, tuple)):
            return [plain(v) for v in obj]
        if isinstance(obj, dict):
            return {k: plain(v) for k, v in obj.items()}
        return obj

    return json.dumps(plain(record), ensure_ascii=False, separators=(", ", ": "))


_SIMPLE = {str: str, int: int, float: (int, float), bool: bool}


def check_types(record: Any) -> None:
    """Refuse a record whose fields do not have their declared simple types (str, int, float, bool,
    lists and dicts of them, optional ones, nested dataclasses)."""
    for name, hint in _field_hints(type(record)):
        value = getattr(record, name)
        if not _fits(value, hint):
            raise TypeError(f"{type(record).__name__}.{name} should be {hint}, got {value!r}")


@functools.lru_cache(maxsize=None)
def _field_hints(cls: type) -> tuple[tuple[str, Any], ...]:
    """``(field name, resolved type)`` of a dataclass, resolved once per class: resolving string annotations
    was most of the time a reset took (every record of every table is checked when a task is built)."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _fits(value: Any, hint: Any) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if origin in (list, tuple, set, frozenset):
        return isinstance(value, origin) and all(_fits(v, args[0]) for v in value) if args else isinstance(value, origin)
    if origin is dict:
        return isinstance(value, dict) and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if hint in _SIMPLE:
        return isinstance(value, _SIMPLE[hint]) and not (hint is not bool and isinstance(value, bool))
    if dataclasses.is_dataclass(hint):
        return isinstance(value, hint)
    return True
