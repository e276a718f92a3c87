"""A bulk build (``add_many``) makes the index that adding the notes one by one makes.

Every note's entry - its terms in order with their ids, the frequencies per field, the lengths,
the marks - and the vocabulary's order are compared, then every answer (attached notes,
search results, scores as exact floats), over realistic notes in several scripts.
"""

from __future__ import annotations

import numpy as np
import pytest
from recall_helpers import index_entries, load_calibration, realistic_notes, synthetic_notes

from oharness.notes.format import Note
from oharness.recall import tokenize
from oharness.recall.index import RecallIndex
from oharness.recall.tokenize import Tokenizer
from oharness.types import Scope

Notes = list[tuple[Scope, Note]]
#: Per note: its key, its terms in entry order, their frequencies and the lengths.
Entry = tuple[tuple[str, str], list[str], list[list[float]], tuple[int, ...]]

WRITTEN: Notes = [
    ("project", Note("pricing-cards", "Pricing cards use fills, not borders", "See [[layout]].")),
    (
        "project",
        Note(
            "layout",
            "Pricing page layout: three tiers",
            "Starter, Team and Business side by side. Why a toggle? Customers asked.",
            ("pricing", "page layout"),
        ),
    ),
    (
        "project",
        Note(
            "cartes",
            "Les cartes de prix utilisent des aplats",
            "La bordure reste déclarée mais transparente ; voir [[pricing-cards]].",
            ("design", "cartes de prix"),
        ),
    ),
    ("project", Note("deploy-zh", "部署流程使用蓝绿发布", "重跑gen-itgc后检查数据库。", ("部署",))),
    ("user", Note("tests-ja", "テストはpytestで実行する", "ｐｙｔｅｓｔ　－ｘ で速く失敗する。")),
    ("user", Note("hindi", "शुभ रात्रि और धन्यवाद", "कल की बैठक में डेटाबेस पर बात हुई।", ("नमस्ते",))),
    ("user", Note("thai", "ทดสอบระบบการชำระเงิน", "ขอบคุณครับ ระบบพร้อมแล้ว", ("ภาษาไทย",))),
    (
        "project",
        Note(
            "identifiers",
            "getUserName returns the display name",
            "Call getUserName() from run_tests.py; the v-model and e.g. gen-itgc stay whole. "
            "PDFs and URLs at 10:00, 1,000 rows, colour and organise, it broke twice.",
            ("on-call", "getUserName", "run tests"),
        ),
    ),
    ("project", Note("empty-body", "A note with no body at all", "")),
    ("project", Note("empty-summary", "", "Only a body, no summary; is that fine?", ("x",))),
    ("user", Note("no-words", "🚀 ...", "!!! ---", ())),
    ("user", Note("repeats", "cache cache caching cached", "cache " * 40, ("cache", "cache"))),
    ("project", Note("links-only", "Links", "[[pricing-cards]] [[layout]] [[pricing-cards]]")),
]


def folder() -> Notes:
    calibration = load_calibration()
    return WRITTEN + calibration.notes + realistic_notes(60) + synthetic_notes(40, seed=4)


def messages(notes: Notes) -> list[str]:
    calibration = load_calibration()
    asked = [message for message, _ in calibration.attach[:30]] + calibration.nothing[:10]
    return asked + [note.summary for _, note in notes[::5]] + ["ขอบคุณครับ", "शुभ रात्रि"]


def entries(index: RecallIndex) -> tuple[list[str], list[Entry]]:
    """The vocabulary in id order and every note's entry, its terms spelled out."""
    terms, found = index_entries(index)
    return terms, [
        (
            entry.key,
            [terms[term_id] for term_id in entry.term_ids.tolist()],
            entry.frequencies.tolist(),
            entry.lengths,
        )
        for entry in sorted(found, key=lambda entry: entry.key)
    ]


def answers(index: RecallIndex, texts: list[str]) -> list[list[tuple[str, str, str]]]:
    found = [index.recall(text) for text in texts] + [index.search(text, 10) for text in texts]
    return [[(hit.scope, hit.id, float(hit.score).hex()) for hit in hits] for hits in found]


def one_by_one(notes: Notes, languages: tuple[str, ...] = ("english",)) -> RecallIndex:
    index = RecallIndex(Tokenizer(languages))
    for scope, note in notes:
        index.add(scope, note)
    return index


def in_bulk(notes: Notes, languages: tuple[str, ...] = ("english",)) -> RecallIndex:
    index = RecallIndex(Tokenizer(languages))
    index.add_many(notes)
    return index


@pytest.mark.parametrize("languages", [("english",), ("english", "french"), ("french",)])
def test_a_bulk_build_makes_the_entries_and_answers_of_adds_one_by_one(
    languages: tuple[str, ...],
) -> None:
    notes = folder()
    single, bulk = one_by_one(notes, languages), in_bulk(notes, languages)
    assert entries(bulk) == entries(single)
    assert answers(bulk, messages(notes)) == answers(single, messages(notes))


def test_every_written_note_has_its_terms_and_marks() -> None:
    # The comparison above means something only if the notes hold what they should.
    index = in_bulk(WRITTEN)
    terms, found = entries(index)
    held = {key: set(spelled) for key, spelled, _, _ in found}
    identifiers = {"getusernam", "user", "name", "run_tests.py", "vmodel", "color", "break"}
    assert identifiers <= held[("project", "identifiers")]
    assert {"部署", "蓝绿", "数据", "genitgc"} <= held[("project", "deploy-zh")]
    assert {"शुभ", "रात्रि"} <= held[("user", "hindi")]
    assert {"ขอ", "คุณ"} <= held[("user", "thai")]
    assert "\x02pricing-cards" in held[("project", "layout")] | held[("project", "cartes")]
    assert held[("user", "no-words")] == set()
    assert any(term.startswith("\x03") for term in held[("project", "layout")])
    lengths = {key: size for key, _, _, size in found}
    assert lengths[("project", "empty-body")][2] == 0
    assert lengths[("user", "repeats")] == (4, 2, 40)
    assert len(terms) == len(set(terms))


def test_a_bulk_build_into_a_filled_index_matches_adds_one_by_one() -> None:
    notes = folder()
    first, rest = notes[:50], notes[50:]
    bulk = in_bulk(first)
    bulk.add_many(rest)
    assert entries(bulk) == entries(one_by_one(notes))
    assert answers(bulk, messages(notes)) == answers(one_by_one(notes), messages(notes))


def test_a_note_given_twice_in_one_batch_is_held_as_the_later_one() -> None:
    notes = folder()[:40]
    scope, note = notes[3]
    later = note.with_changes(summary="Rewritten summary about kubernetes migrations")
    batch = [*notes, (scope, later)]
    bulk = in_bulk(batch)
    assert entries(bulk) == entries(one_by_one(batch))
    assert bulk.recall("the kubernetes migrations")[0].id == note.id  # the later one, first
    assert len(bulk) == 40


@pytest.mark.parametrize("count", [0, 1, 2])
def test_batches_of_none_one_and_two_notes(count: int) -> None:
    notes = WRITTEN[:count]
    bulk = in_bulk(notes)
    assert entries(bulk) == entries(one_by_one(notes))
    assert len(bulk) == count


def test_a_bulk_built_index_takes_edits_as_one_built_by_adds() -> None:
    notes = folder()
    single, bulk = one_by_one(notes), in_bulk(notes)
    for index in (single, bulk):
        scope, note = notes[7]
        index.add(scope, note.with_changes(summary="Edited: rollback of the payments queue"))
        removed_scope, removed = notes[11]
        index.remove(removed_scope, removed.id)
        index.add("user", Note("fresh", "Fresh note on the payments queue", "queue depth"))
    assert entries(bulk) == entries(single)
    asked = ["payments queue rollback", "pricing cards"]
    assert answers(bulk, asked) == answers(single, asked)


def test_the_term_order_lists_each_terms_notes_ascending() -> None:
    bulk = in_bulk(folder())
    postings = bulk._postings
    for term_id in range(0, len(postings.vocabulary), 7):
        (slots,) = postings.slots_of_many([postings.vocabulary[term_id]])
        assert slots is not None
        assert np.all(np.diff(slots) > 0)


def test_the_tokeniser_memo_emptied_during_a_build_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notes = folder()
    expected = entries(one_by_one(notes, ("english", "french")))
    monkeypatch.setattr(tokenize, "_MAX_CACHED_CHUNKS", 25)  # emptied again and again
    assert entries(in_bulk(notes, ("english", "french"))) == expected


def test_notes_may_come_from_a_generator_and_keep_their_cache_keys() -> None:
    notes = folder()[:30]
    keyed, other = (notes[2][0], notes[2][1].id), (notes[3][0], notes[3][1].id)
    index = RecallIndex()
    index.add_many(((scope, note) for scope, note in notes), {keyed: (7, 8, 9)})
    assert len(index) == 30
    assert index.cache_key(keyed) == (7, 8, 9)
    assert index.cache_key(other) is None
    assert entries(index) == entries(one_by_one(notes))


def test_what_a_bulk_build_leaves_in_the_tokeniser_counts_as_a_fresh_one() -> None:
    notes = folder()
    bulk = in_bulk(notes, ("english", "french"))
    fresh = Tokenizer(("english", "french"))
    for _, note in notes:
        for text in (note.summary, "\n".join(note.tags), note.body):
            assert bulk.tokenizer.counts(text) == fresh.counts(text)


def test_a_bulk_build_over_notes_already_held_replaces_them_as_adds_do() -> None:
    notes = folder()
    edited = [
        (scope, note.with_changes(summary=f"{note.summary} revised", tags=("revised",)))
        for scope, note in notes[10:40]
    ]
    single, bulk = one_by_one(notes), in_bulk(notes)
    for scope, note in edited:
        single.add(scope, note)
    bulk.add_many(edited)
    assert entries(bulk) == entries(single)
    assert answers(bulk, messages(notes)) == answers(single, messages(notes))


def test_a_bulk_build_into_an_index_emptied_by_removals_matches_adds() -> None:
    notes = folder()[:60]
    single, bulk = one_by_one(notes), in_bulk(notes)
    for index in (single, bulk):
        for scope, note in notes:
            index.remove(scope, note.id)
        assert len(index) == 0
    for scope, note in notes[::-1]:
        single.add(scope, note)
    bulk.add_many(notes[::-1])
    assert entries(bulk) == entries(single)
    assert answers(bulk, messages(notes)) == answers(single, messages(notes))


def test_rows_of_many_notes_read_at_once_equal_rows_read_one_by_one() -> None:
    import numpy as np

    from oharness.recall.postings import Rows

    ids = np.array([5, 6, 7, 8, 9, 10], dtype=np.int32)
    owners = np.array([0, 0, 2, 2, 2, 3], dtype=np.int32)
    rows = Rows([(ids, owners)], 4)
    rows[2] = np.array([42], dtype=np.int32)  # set since the base
    rows[5] = np.array([43, 44], dtype=np.int32)  # a slot after the base
    slots = np.array([3, 2, 0, 1, 5], dtype=np.int32)
    found, owner = rows.gather(slots)
    by_position = {n: sorted(found[owner == n].tolist()) for n in range(len(slots))}
    assert by_position == {n: sorted(rows[int(slot)].tolist()) for n, slot in enumerate(slots)}
    assert by_position == {0: [10], 1: [42], 2: [5, 6], 3: [], 4: [43, 44]}
