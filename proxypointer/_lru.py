"""One bounded, thread-safe least-recently-used map: every cache of the package uses it.

Values are computed outside the lock by the caller; two threads missing the same key both
compute it and the second :meth:`LRU.put` wins, which is harmless for the immutable values
cached here (stored lines of a version, trees of a live version, query vectors, document
frequencies).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A map that keeps the ``size`` entries read or written last.

    Args:
        size: Most entries kept (0 keeps none).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, default: Any = None) -> V | Any:
        """Return the value for ``key`` (marking it most recent), or ``default``."""
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: K, value: V) -> None:
        """Store a value, dropping the least recently used entries beyond ``size``."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def keys(self) -> list[K]:
        """Return the keys kept, least recently used first."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._items.clear()
