"""Search ranking beyond single words: links, tags as facets, irregular forms, phrases."""

from __future__ import annotations

import pytest

from oharness.notes.format import Note
from oharness.recall.index import ASKED_SHARE, LINK_HOPS, LINK_SHARE, RecallIndex
from oharness.recall.tokenize import Tokenizer


def ids(index: RecallIndex, query: str) -> list[str]:
    return [hit.id for hit in index.search(query, 5)]


def test_a_reply_is_found_through_the_note_it_answers() -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("project", Note("q1", "Which queue do the billing workers read?", "In standup.")),
            ("project", Note("a1", "The orange one, since March.", "Moved it. [[q1]]")),
            ("project", Note("x1", "The orange logo is final.", "Design signed off.")),
            ("project", Note("x2", "Since March we meet on Mondays.", "Calendar invite sent.")),
        ]
    )
    found = ids(index, "which queue do the billing workers read")
    assert found == ["q1", "a1"]  # the answer shares no word with the question


def test_a_question_passes_more_of_its_score_to_its_reply_than_a_statement() -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("project", Note("ask", "Billing queue", "Which queue do the workers read?")),
            ("project", Note("tell", "Billing queue", "The workers read a queue.")),
            ("project", Note("ask-reply", "The orange one.", "Since March. [[ask]]")),
            ("project", Note("tell-reply", "Right.", "Noted. [[tell]]")),
        ]
    )
    scores = {hit.id: hit.score for hit in index.search("billing queue", 4)}
    assert scores["ask"] == pytest.approx(scores["tell"])
    assert scores["ask-reply"] == pytest.approx(ASKED_SHARE * scores["ask"])
    assert scores["tell-reply"] == pytest.approx(LINK_SHARE * scores["tell"])


def test_a_question_mark_inside_a_url_asks_nothing() -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("project", Note("doc", "Billing queue", "See https://wiki.example/q?id=7 now.")),
            ("project", Note("reply", "Right.", "Noted. [[doc]]")),
        ]
    )
    scores = {hit.id: hit.score for hit in index.search("billing queue", 2)}
    assert scores["reply"] == pytest.approx(LINK_SHARE * scores["doc"])


def test_a_reply_to_a_reply_gets_a_share_of_the_share() -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("project", Note("q", "Where do the billing workers run?", "In standup.")),
            ("project", Note("a", "On the old cluster.", "For now. [[q]]")),
            ("project", Note("b", "Until June.", "Then we move. [[a]]")),
            ("project", Note("c", "Unrelated", "Lunch at noon. [[b]]")),
        ]
    )
    scores = {hit.id: hit.score for hit in index.search("billing workers", 4)}
    assert scores["a"] == pytest.approx(ASKED_SHARE * scores["q"])
    assert scores["b"] == pytest.approx(LINK_SHARE * scores["a"])
    assert "c" not in scores  # LINK_HOPS links away at most
    assert LINK_HOPS == 2


def test_link_markup_is_not_indexed_as_words() -> None:
    index = RecallIndex()
    index.add("project", Note("a", "Deploy checklist", "See [[release-train-notes]] first."))
    index.add("project", Note("release-train-notes", "Release train", "Leaves at noon."))
    target, linking = index.search("train")
    assert target.id == "release-train-notes"
    # The linking note is found only through the link, never through the link's words.
    assert linking.id == "a"
    assert linking.score == pytest.approx(LINK_SHARE * target.score)


def test_a_match_in_the_tags_ranks_above_the_same_match_in_the_body() -> None:
    index = RecallIndex()
    index.add("project", Note("body", "Weekly sync", "Caroline brought the agenda.", ("Mel",)))
    index.add("project", Note("tag", "Weekly sync", "Someone brought the agenda.", ("Caroline",)))
    assert ids(index, "what did Caroline bring to the weekly sync")[0] == "tag"


def test_a_note_holding_every_facet_of_the_query_ranks_above_notes_holding_one() -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("project", Note("both", "Went hiking", "A long walk.", ("Caroline", "July 2023"))),
            ("project", Note("speaker", "Went hiking", "A long walk.", ("Caroline", "May 2023"))),
            ("project", Note("month", "Went hiking", "A long walk.", ("Mel", "July 2023"))),
            ("project", Note("none", "Went hiking", "A long walk.", ("Mel", "May 2023"))),
        ]
    )
    hits = index.search("where did Caroline go hiking in July", 4)
    assert [hit.id for hit in hits[:1]] == ["both"]
    assert {hit.id for hit in hits[1:3]} == {"speaker", "month"}
    assert hits[3].id == "none"


def test_irregular_forms_meet_their_base() -> None:
    tokens = Tokenizer().tokens
    assert tokens("She broke it") == tokens("she will break it")
    assert tokens("we went") == tokens("we go")
    assert tokens("the children") == tokens("a child")
    index = RecallIndex()
    index.add("project", Note("leg", "Skiing trip", "I broke my leg on the last day."))
    index.add("project", Note("other", "Skiing trip", "Great snow all week."))
    assert ids(index, "when did she break her leg")[0] == "leg"


def test_phrases_pair_neighbouring_words_in_either_order() -> None:
    tokenizer = Tokenizer()
    summary = set(tokenizer.phrases("Pricing cards use fills, not borders"))
    assert set(tokenizer.phrases("the cards on the pricing page")) & summary
    assert set(tokenizer.phrases("should the cards have fills or borders?")) & summary
    assert not set(tokenizer.phrases("price the new cards")) & summary - {
        phrase for phrase in summary if "card" in phrase and "price" in phrase
    }


@pytest.mark.parametrize(
    ("british", "american"),
    [
        ("the colour of the header", "the color of the header"),
        ("organise the imports", "organize the imports"),
        ("an organisation account", "an organization account"),
        ("analyse the logs", "analyze the logs"),
        ("the centre column", "the center column"),
        ("a software licence", "a software license"),
        ("the product catalogue", "the product catalog"),
        ("cancelled orders", "canceled orders"),
        ("my favourite editor", "my favorite editor"),
        ("a grey button", "a gray button"),
    ],
)
def test_british_and_american_spellings_meet(british: str, american: str) -> None:
    tokens = Tokenizer().tokens
    assert tokens(british) == tokens(american)
    index = RecallIndex()
    index.add("project", Note("british", british.capitalize(), "Decided in review."))
    index.add("project", Note("other", "Deploys happen on Tuesdays", "Release train."))
    assert ids(index, american)[:1] == ["british"]


def test_spelling_variants_only_with_an_english_stemmer() -> None:
    assert Tokenizer(["french"]).tokens("colour") != Tokenizer(["french"]).tokens("color")


def test_the_zeros_of_a_time_are_not_a_word() -> None:
    tokens = Tokenizer().tokens
    assert tokens("No meetings before 10:00") == tokens("no meetings before 10")
    assert tokens("limit of 2,000 rows") == tokens("limit of 2 rows")
    assert "2000" in tokens("the year 2000") and "0" in tokens("exit code 0")


def test_notes_linking_in_a_cycle_share_a_bounded_amount() -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("project", Note("a", "Billing workers?", "Where? [[b]]")),
            ("project", Note("b", "On the old cluster.", "For now. [[a]]")),
        ]
    )
    scores = {hit.id: hit.score for hit in index.search("billing workers", 2)}
    direct = scores["a"] / (1 + LINK_SHARE * ASKED_SHARE)  # a's own score, before b gives back
    assert scores["b"] == pytest.approx(ASKED_SHARE * direct)


@pytest.mark.parametrize(
    "body",
    ["Really?! Which one", "Which one?", "(which one?)", "どのキューを読む？それから", "Why?.."],
)
def test_a_question_is_read_whatever_follows_its_mark(body: str) -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("project", Note("ask", "Billing queue", body)),
            ("project", Note("reply", "Right.", "Noted. [[ask]]")),
        ]
    )
    scores = {hit.id: hit.score for hit in index.search("billing queue", 2)}
    assert scores["reply"] == pytest.approx(ASKED_SHARE * scores["ask"])
