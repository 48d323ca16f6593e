"""A small name -> object registry shared by the project's extension points.

Verifiers, tasks, templates, filters and metrics register themselves here
(the lm-evaluation-harness pattern): registering a name twice raises, and a
failed lookup lists what exists. It does not cover veRL's own registries
(policy losses, advantage estimators): those stay veRL's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects of one kind (``kind`` appears in error messages).

    >>> r: Registry[int] = Registry("number")
    >>> r.add("one", 1)
    1
    >>> r.get("one")
    1
    >>> r.get("two")
    Traceback (most recent call last):
    ...
    KeyError: "unknown number 'two'; known: one"
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def add(self, name: str, obj: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj
        return obj

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def deco(obj: T) -> T:
            return self.add(name, obj)

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)
