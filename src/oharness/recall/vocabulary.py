"""The terms of the recall index and their ids, kept compactly (spec 03.3).

A process that loads the cache holds some hundred thousand terms (every word, phrase and mark
of every note). As Python strings in a dictionary they would cost more than the postings, so
the terms of the load stay as they were read: one UTF-8 blob with an offset per term, and a
sorted array of 64-bit hashes with the id of each. A term is looked up by its hash and its
bytes compared; a term added later (a new note's) is kept in a plain dictionary beside them.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt


def term_hash(data: bytes | memoryview) -> int:
    """A stable 64-bit hash of a term's UTF-8 bytes (two checksums side by side)."""
    return zlib.crc32(data) << 32 | zlib.adler32(data)


class Vocabulary:
    """Term -> id (ids from 0, in the order terms were added) and id -> term."""

    def __init__(
        self,
        blob: bytes | memoryview = b"",
        offsets: npt.NDArray[np.int64] | None = None,
        hashes: tuple[npt.NDArray[np.uint64], npt.NDArray[np.int32]] | None = None,
    ) -> None:
        """An empty vocabulary, or the terms as a load reads them back: their :meth:`blob`
        with its offsets, and their :meth:`hashes`."""
        self._blob = blob
        self._offsets = offsets if offsets is not None else np.zeros(1, dtype=np.int64)
        self._base = len(self._offsets) - 1
        if hashes is None:
            hashes = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int32)
        self._hashes, self._order = hashes  # sorted hashes, and the id of each
        self._more: dict[str, int] = {}
        self._more_terms: list[str] = []

    @classmethod
    def of(cls, terms: Iterable[str]) -> Vocabulary:
        """A vocabulary of ``terms`` (distinct), their ids in order, kept as a load keeps them."""
        added = cls()
        added.add_many(list(terms))
        blob, offsets = added.blob()
        return cls(blob, offsets, added.hashes())

    def blob(self) -> tuple[bytes | memoryview, npt.NDArray[np.int64]]:
        """Every term as one UTF-8 blob and the offset of each (one more than terms)."""
        if not self._more_terms:
            return self._blob, self._offsets
        more = [term.encode() for term in self._more_terms]
        offsets = np.concatenate(
            (self._offsets, self._offsets[-1] + np.cumsum([len(data) for data in more]))
        )
        return bytes(self._blob) + b"".join(more), offsets

    def __len__(self) -> int:
        return self._base + len(self._more_terms)

    def __getitem__(self, term_id: int) -> str:
        if term_id < self._base:
            start, end = self._offsets[term_id : term_id + 2].tolist()
            return str(self._blob[start:end], "utf-8")
        return self._more_terms[term_id - self._base]

    def __iter__(self) -> Iterator[str]:
        return (self[term_id] for term_id in range(len(self)))

    def hashes(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int32]]:
        """The sorted hashes of every term and the id of each (what a load reads back)."""
        if not self._more_terms:
            return self._hashes, self._order
        more = np.array([term_hash(term.encode()) for term in self._more_terms], dtype=np.uint64)
        hashes = np.concatenate((self._hashes, more))
        ids = np.concatenate((self._order, np.arange(self._base, len(self), dtype=np.int32)))
        order = np.argsort(hashes, kind="stable")
        return hashes[order], ids[order]

    def get_many(self, terms: list[str]) -> list[int | None]:
        """The id of each term, None where unknown: the terms read from the cache found by
        hash (one search for all), their bytes compared."""
        found = list(map(self._more.get, terms))
        if not self._base or None not in found:
            return found
        asked = [n for n, term_id in enumerate(found) if term_id is None]
        data = [terms[n].encode() for n in asked]
        hashed = np.array([term_hash(item) for item in data], dtype=np.uint64)
        positions = np.searchsorted(self._hashes, hashed).tolist()
        hashes, order, offsets, blob = self._hashes, self._order, self._offsets, self._blob
        for n, item, value, position in zip(asked, data, hashed.tolist(), positions, strict=True):
            while position < self._base and int(hashes[position]) == value:
                term_id = int(order[position])
                if blob[int(offsets[term_id]) : int(offsets[term_id + 1])] == item:
                    found[n] = term_id
                    break
                position += 1
        return found

    def add_many(self, terms: list[str]) -> list[int]:
        """The id of each term, a new term getting the next."""
        found = self.get_many(terms)
        for n, term_id in enumerate(found):
            if term_id is None:
                term = terms[n]
                known = self._more.get(term)  # a repeat of a term new in this list
                if known is None:
                    known = self._more[term] = len(self)
                    self._more_terms.append(term)
                found[n] = known
        return found  # type: ignore[return-value]
