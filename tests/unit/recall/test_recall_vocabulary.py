"""The terms of a cache load, found by hash, answer as a plain dictionary of the same terms."""

from __future__ import annotations

import pytest

from oharness.recall import vocabulary
from oharness.recall.vocabulary import Vocabulary

TERMS = ["deploy", "\x01card price", "\x03on-call", "部署", "", "ทดสอบ", "x" * 300, "deploys"]
ASKED = [*TERMS, "absent", "\x01price card", "部", "deploy "]


def plain(terms: list[str], asked: list[str]) -> list[int | None]:
    ids = {term: number for number, term in enumerate(terms)}
    return [ids.get(term) for term in asked]


def test_terms_found_by_hash_are_those_of_a_dictionary() -> None:
    loaded = Vocabulary.of(TERMS)
    assert loaded.get_many(ASKED) == plain(TERMS, ASKED)
    assert [loaded[number] for number in range(len(loaded))] == TERMS


def test_equal_hashes_are_told_apart_by_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vocabulary, "term_hash", lambda data: len(data) % 2)
    loaded = Vocabulary.of(TERMS)
    assert loaded.get_many(ASKED) == plain(TERMS, ASKED)


def test_terms_added_after_a_load_get_the_next_ids_and_are_written_back() -> None:
    loaded = Vocabulary.of(TERMS)
    added = ["new", "deploy", "new", "\x02link"]
    assert loaded.add_many(added) == [len(TERMS), 0, len(TERMS), len(TERMS) + 1]
    everything = [*TERMS, "new", "\x02link"]
    blob, offsets = loaded.blob()
    again = Vocabulary(blob, offsets, loaded.hashes())
    assert again.get_many([*ASKED, "new", "\x02link"]) == plain(
        everything, [*ASKED, "new", "\x02link"]
    )
    assert list(again) == everything
