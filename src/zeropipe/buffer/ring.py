"""RingColumns: growable FIFO rings of rows, addressed by ever-increasing logical row numbers.

Runs in: driver. The replay buffer keeps every segment's frames and per-step data in a few flat
preallocated arrays instead of one Python object per segment, so that a batch of unroll windows is
built with one fancy-indexing gather per field. Rows are appended at the tail and released from the
head (FIFO eviction); a logical row r lives at physical row r % capacity, so neither appending nor
releasing ever moves data. When the live rows would overflow, the arrays grow by 1.25x and the
live rows are re-placed at their new physical positions (logical numbers never change).
"""

from __future__ import annotations

import numpy as np

_GROWTH = 1.25


class RingColumns:
    """Named columns sharing one ring of rows.

    Args:
        row_specs: column name -> (row shape, dtype).
        initial_rows: first allocation, in rows.
    """

    def __init__(
        self, row_specs: dict[str, tuple[tuple[int, ...], np.dtype]], initial_rows: int = 1024
    ) -> None:
        self.row_specs = {k: (tuple(shape), np.dtype(dt)) for k, (shape, dt) in row_specs.items()}
        self.head = 0  # logical number of the oldest live row
        self.tail = 0  # logical number one past the newest live row
        self._cap = max(1, int(initial_rows))
        self._data = {k: np.empty((self._cap, *s), dtype=d) for k, (s, d) in self.row_specs.items()}

    @property
    def num_rows(self) -> int:
        """Live rows."""
        return self.tail - self.head

    def nbytes(self) -> int:
        """Bytes of the live rows."""
        return sum(self.num_rows * a[0].nbytes for a in self._data.values())

    def allocated_nbytes(self) -> int:
        """Bytes of the allocated arrays (the process's real footprint for this store)."""
        return sum(a.nbytes for a in self._data.values())

    def append(self, columns: dict[str, np.ndarray]) -> int:
        """Append the same number of rows to every column; returns the first new logical row."""
        count = len(next(iter(columns.values())))
        self.reserve(self.num_rows + count)
        start = self.tail
        for name, values in columns.items():
            self._write_span(self._data[name], start, values)
        self.tail += count
        return start

    def release(self, upto: int) -> None:
        """Drop the live rows with logical number < `upto` (FIFO eviction)."""
        self.head = max(self.head, min(int(upto), self.tail))

    def take(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Gather logical `rows` (any int shape [...]) of a column -> [..., *row shape]."""
        return self._data[name][np.remainder(rows, self._cap)]

    def put(self, name: str, rows: np.ndarray, values: np.ndarray) -> None:
        """Overwrite logical `rows` [M] of a column with `values` [M, *row shape]."""
        self._data[name][np.remainder(rows, self._cap)] = values

    def live(self, name: str) -> np.ndarray:
        """Copy of a column's live rows in logical order, [num_rows, *row shape]."""
        return self.take(name, np.arange(self.head, self.tail))

    def restore(self, head: int, columns: dict[str, np.ndarray]) -> None:
        """Replace the contents with `columns` whose first row has logical number `head`."""
        count = len(next(iter(columns.values())))
        self.head = self.tail = int(head)
        self._cap = max(self._cap, count)
        self._data = {k: np.empty((self._cap, *s), dtype=d) for k, (s, d) in self.row_specs.items()}
        self.append(columns)

    def reserve(self, rows_needed: int) -> None:
        """Make room for `rows_needed` live rows (a sizing hint; growth also happens on demand)."""
        if rows_needed <= self._cap:
            return
        new_cap = max(int(rows_needed), int(self._cap * _GROWTH) + 1)
        logical = np.arange(self.head, self.tail)
        for name, old in self._data.items():
            new = np.empty((new_cap, *old.shape[1:]), dtype=old.dtype)
            new[logical % new_cap] = old[logical % self._cap]
            self._data[name] = new
        self._cap = new_cap

    def _write_span(self, array: np.ndarray, start: int, values: np.ndarray) -> None:
        """Write `values` at logical rows [start, start + len), splitting at the ring's end."""
        count = len(values)
        phys = start % self._cap
        first = min(count, self._cap - phys)
        array[phys : phys + first] = values[:first]
        array[: count - first] = values[first:]
