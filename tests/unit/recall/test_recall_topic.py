"""The gate's per-slot topic weights: renewed for all notes at once as computed one by one."""

from __future__ import annotations

import numpy as np
from recall_helpers import realistic_notes

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex
from oharness.recall.tokenize import Tokenizer, unspaced_term


def _folder() -> RecallIndex:
    index = RecallIndex()
    index.add_many(realistic_notes(60))
    index.add("project", Note("ja-1", "デプロイの手順", "本番環境へのデプロイ", ("deploy",)))
    index.add("user", Note("th-1", "การประชุมทีม", "ทุกวันจันทร์", ("meeting", "ทีม")))
    index.add("project", Note("short-1", "Pricing cards", "fills not borders", ("design",)))
    long_body = " ".join(f"word{number} detail{number % 13}" for number in range(80))
    index.add("project", Note("long-1", "Release checklist", long_body, ("release",)))
    for scope, note in realistic_notes(60)[::7]:
        index.remove(scope, note.id)  # free slots among the live ones
    return index


def test_renewed_topic_weights_equal_those_of_each_note_alone() -> None:
    index = _folder()
    judge, postings = index._judge, index._postings
    topics = judge._topics
    entries = postings.entries_by_slot()
    assert any(entry is None for entry in entries)
    arguments = (len(postings), judge._priors_of, postings.document_frequencies)
    topics.reset()
    topics._renew(entries, *arguments)
    renewed = (topics._head.copy(), topics._pairs.copy(), topics._body.copy())
    topics.reset()
    topics._update(entries, *arguments, judge._topic_frequencies)
    one_by_one = (topics._head, topics._pairs, topics._body)
    for all_at_once, alone in zip(renewed, one_by_one, strict=True):
        assert len(all_at_once) == len(entries)
        np.testing.assert_allclose(all_at_once, alone[: len(entries)], rtol=1e-12)
    assert renewed[1].any() and renewed[2].any()  # pairs (Japanese, Thai) and short bodies


def test_only_terms_of_scripts_without_spaces_are_unspaced() -> None:
    assert unspaced_term("デプ") and unspaced_term("ทีม")
    assert not unspaced_term("deploy")
    assert not unspaced_term("\x03on-call")
    assert not unspaced_term("café")


def test_priors_of_many_terms_equal_each_alone() -> None:
    terms = ["the", "deploy", "2024", "7", "ああ", "デプ", "zqxv", "\x03on-call", "the"]
    assert Tokenizer().priors(terms) == [Tokenizer().prior(term) for term in terms]
    assert Tokenizer().priors([]) == []


def test_the_gate_remembers_priors_and_scripts_of_the_terms_it_weighed() -> None:
    index = _folder()
    judge, postings = index._judge, index._postings
    ids = np.array([3, 1, 3, 0, len(postings.terms) - 1, 1], dtype=np.int32)
    tokenizer = index.tokenizer
    expected = [tokenizer.prior(postings.terms[term_id]) for term_id in ids.tolist()]
    assert judge._priors_of(ids).tolist() == expected
    assert judge._priors_of(ids[::-1]).tolist() == expected[::-1]
    scripts = [unspaced_term(postings.terms[term_id]) for term_id in range(len(postings.terms))]
    every = np.arange(len(postings.terms), dtype=np.int32)
    assert judge._unspaced_of(every).tolist() == scripts
    assert any(scripts)


def test_short_bodies_read_together_equal_each_read_alone() -> None:
    index = _folder()
    index.add("project", Note("empty-1", "Pricing cards", "", ("design",)))
    judge, postings = index._judge, index._postings
    entries = postings.entries_by_slot()
    slots = np.arange(len(entries))
    expected = []
    for entry in entries:
        body: tuple[int, ...] = ()
        if entry is not None:
            frequencies = entry.frequencies
            only = (frequencies[:, 2] > 0) & (frequencies[:, 0] + frequencies[:, 1] == 0)
            body = tuple(entry.term_ids[only].tolist())
        expected.append(body)
    assert any(entry is None for entry in entries) and () in expected
    assert sum(map(bool, expected)) > 1
    assert judge._bodies_of(slots) == expected  # read together
    assert judge._bodies_of(slots[::-1]) == expected[::-1]  # remembered
    judge.reset()
    assert [judge._bodies_of(slots[n : n + 1])[0] for n in slots] == expected  # one by one
