"""The recall index: incremental changes, search, the recall gate and threshold, helpers."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from recall_helpers import synthetic_notes

from oharness.notes.format import Note
from oharness.recall.index import Hit, RecallIndex
from oharness.recall.score import USAGE_BOOST_MAX, Usage
from oharness.recall.tokenize import Tokenizer
from oharness.settings import RecallSettings
from oharness.types import Scope

PRICING = Note(
    "pricing-borderless-3fa",
    "Pricing cards use fills, not borders",
    "Cards on the pricing page are separated by fill and whitespace.",
    ("design", "pricing"),
)
K8S = Note(
    "k8s-cluster-1ab",
    "Kubernetes cluster lives in eu-west-1",
    "Both staging and production run there; kubectl contexts are named after them.",
    ("infra", "k8s"),
)
BODY_ONLY = Note(
    "release-notes-7c1",
    "How release notes are written",
    "Mention kubernetes upgrades at the top of the release notes.",
    ("docs",),
)
ITGC = Note(
    "itgc-cache-9ff",
    "重跑gen-itgc后要清缓存",
    "运行 gen-itgc 之后需要清理 .cache/itgc 目录，否则构建会使用旧的类型。",
    ("gen-itgc", "缓存"),
)
JAPANESE = Note("ja-deploy-5c8", "本番デプロイには二人の承認が必要", "緊急時は責任者の承認で可。")


def index_of(*notes: tuple[Scope, Note]) -> RecallIndex:
    index = RecallIndex()
    index.add_many(notes)
    return index


@pytest.fixture
def small() -> RecallIndex:
    return index_of(
        ("project", PRICING),
        ("project", K8S),
        ("project", BODY_ONLY),
        ("project", ITGC),
        ("user", JAPANESE),
    )


def ids(hits: list[Hit]) -> list[str]:
    return [hit.id for hit in hits]


def test_search_ranks_without_gate_or_threshold(small: RecallIndex) -> None:
    hits = small.search("kubernetes")
    assert ids(hits) == ["k8s-cluster-1ab", "release-notes-7c1"]
    assert [hit.in_summary_or_tags for hit in hits] == [True, False]
    assert small.search("zebras and quokkas") == []
    assert small.search("kubernetes", limit=0) == []


def test_recall_attaches_a_note_named_in_its_summary(small: RecallIndex) -> None:
    hits = small.recall("where does the kubernetes cluster run?")
    assert ids(hits) == ["k8s-cluster-1ab"]  # the body-only match is gated out
    assert hits[0].score >= RecallSettings().min_score


def test_recall_attaches_nothing_for_chit_chat(small: RecallIndex) -> None:
    for message in ("hey, how was your weekend?", "thanks, that worked", "ok"):
        assert small.recall(message) == []


def test_body_only_matches_are_never_attached(small: RecallIndex) -> None:
    assert ids(small.recall("upgrades mentioned at the top")) == []
    assert ids(small.search("upgrades mentioned at the top")) == ["release-notes-7c1"]


def test_threshold_limit_and_switch_come_from_settings(small: RecallIndex) -> None:
    message = "borders of the pricing cards, and the kubernetes cluster"
    assert len(small.recall(message)) == 2
    assert small.recall(message, settings=RecallSettings(min_score=50.0)) == []
    assert len(small.recall(message, settings=RecallSettings(per_turn=1))) == 1
    assert small.recall(message, settings=RecallSettings(enabled=False)) == []


def test_excluded_notes_are_not_attached_again(small: RecallIndex) -> None:
    message = "borders of the pricing cards, and the kubernetes cluster"
    assert ids(small.recall(message, exclude={("project", "k8s-cluster-1ab")})) == [
        "pricing-borderless-3fa"
    ]
    assert small.recall(message, exclude={"k8s-cluster-1ab", "pricing-borderless-3fa"}) == []
    assert len(small.recall(message, exclude={("user", "k8s-cluster-1ab")})) == 2


def test_usage_breaks_ties_but_never_attaches(small: RecallIndex) -> None:
    twin = Note("k8s-twin-2bc", K8S.summary, K8S.body, K8S.tags)
    small.add("user", twin)
    message = "where does the kubernetes cluster run?"
    plain = small.recall(message)
    assert ids(plain) == ["k8s-cluster-1ab", "k8s-twin-2bc"]  # a tie, ordered by key
    usage: dict[tuple[Scope, str], Usage] = {("user", "k8s-twin-2bc"): Usage(12, 1_000)}
    boosted = small.recall(message, usage=usage, now=2_000)
    assert ids(boosted) == ["k8s-twin-2bc", "k8s-cluster-1ab"]
    assert boosted[0].score == plain[1].score  # reported scores stay unboosted
    heavy: dict[tuple[Scope, str], Usage] = {("project", "release-notes-7c1"): Usage(10_000, 2_000)}
    assert "release-notes-7c1" not in ids(small.recall(message, usage=heavy, now=2_000))
    assert USAGE_BOOST_MAX <= 0.05


def test_an_edit_shows_in_the_next_recall(small: RecallIndex) -> None:
    edited = K8S.with_changes(summary="Nomad cluster lives in eu-west-1", tags=("infra",))
    small.add("project", edited)
    assert ids(small.recall("the nomad cluster")) == ["k8s-cluster-1ab"]
    assert ids(small.recall("kubernetes")) == []  # now only in another note's body
    assert small.remove("project", "k8s-cluster-1ab")
    assert not small.remove("project", "k8s-cluster-1ab")
    assert small.search("nomad") == []
    assert len(small) == 4


def test_the_same_id_in_both_scopes_is_two_notes(small: RecallIndex) -> None:
    small.add("user", K8S)
    assert {hit.key for hit in small.search("kubernetes")} >= {
        ("project", "k8s-cluster-1ab"),
        ("user", "k8s-cluster-1ab"),
    }
    assert ("user", "k8s-cluster-1ab") in small


def test_chinese_and_japanese_queries_find_their_notes(small: RecallIndex) -> None:
    assert ids(small.recall("gen-itgc 跑完之后要清缓存吗"))[:1] == ["itgc-cache-9ff"]
    assert ids(small.search("缓存"))[:1] == ["itgc-cache-9ff"]
    assert ids(small.recall("本番にデプロイしてもいいですか")) == ["ja-deploy-5c8"]


def test_mixed_cjk_and_ascii_queries_find_identifiers(small: RecallIndex) -> None:
    assert ids(small.recall("重跑gen-itgc之后构建失败"))[:1] == ["itgc-cache-9ff"]
    assert ids(small.search("itgc"))[:1] == ["itgc-cache-9ff"]


def test_related_excludes_the_note_itself() -> None:
    layout = Note("pricing-layout-a91", "Pricing page layout: three tiers", "Cards side by side.")
    index = index_of(("project", PRICING), ("project", K8S), ("project", layout))
    assert ids(index.related(PRICING, scope="project")) == ["pricing-layout-a91"]
    assert ids(index.related(PRICING, limit=0)) == []


def test_related_has_a_floor_and_is_usually_empty() -> None:
    office = Note("plants-1", "Office plants need water", "Water them on Fridays.", ("plants",))
    weekly = Note("standup-2", "Standup moves to Fridays", "From next week on.", ("meetings",))
    index = index_of(("project", PRICING), ("project", K8S), ("project", weekly))
    # One shared everyday word ("Fridays") is not a topic: nothing is related.
    assert index.related(office) == []
    layout = Note("pricing-layout-a91", "Pricing page layout: three tiers", "Cards side by side.")
    index.add("project", layout)
    assert ids(index.related(PRICING, scope="project")) == ["pricing-layout-a91"]
    # Without the gate, candidates for a closer test (likelyDuplicate) are all ranked.
    assert len(index.related(office, gated=False)) >= 1


def test_summary_similarity_flags_likely_duplicates() -> None:
    index = RecallIndex()
    same = Note("a-1", "Pricing cards: fill instead of borders", "", ("pricing",))
    other = Note("b-2", "Cards on the dashboard use shadows", "")
    assert index.similarity(PRICING, same) == pytest.approx(0.8)  # 4 shared terms of 5 each
    assert index.likely_duplicate(PRICING, same)
    assert not index.likely_duplicate(PRICING, other)
    assert index.similarity(PRICING, Note("c-3", "the", "")) == 0.0


def test_a_word_with_several_stems_counts_once() -> None:
    index = RecallIndex(Tokenizer(["english", "french"]))
    index.add("project", Note("runs-1", "Running the nightly job", "", ()))
    (hit,) = index.search("running")
    (alone,) = index.search("nightly")
    # "running" has two stems here (run, running), both in the note; it must not count double.
    assert hit.score == pytest.approx(alone.score, rel=0.01)


def test_empty_index_answers_nothing() -> None:
    index = RecallIndex()
    assert index.search("anything") == []
    assert index.recall("anything") == []
    assert index.related(PRICING) == []


def test_notes_without_a_word_are_indexed_and_never_found() -> None:
    index = RecallIndex()
    index.add_many([("project", Note("rocket", "🚀", "")), ("user", Note("dots", "...", "!!"))])
    index.add("project", Note("party", "🎉", ""))
    index.add("project", PRICING)
    assert len(index) == 4
    assert ids(index.search("pricing cards")) == [PRICING.id]
    assert index.recall("🚀") == []


def _results(index: RecallIndex, queries: list[str]) -> list[list[tuple[Scope, str, float]]]:
    return [
        [(hit.scope, hit.id, round(hit.score, 9)) for hit in index.search(query, 20)]
        + [(hit.scope, hit.id, round(hit.score, 9)) for hit in index.recall(query)]
        for query in queries
    ]


def test_incremental_changes_equal_a_rebuild() -> None:
    rng = random.Random(3)
    pool = synthetic_notes(400, seed=9)
    incremental = RecallIndex()
    incremental.add_many(pool[:200])
    current = dict(((scope, note.id), note) for scope, note in pool[:200])
    for step in range(300):
        if step % 10 == 0:  # queries between changes keep per-term data: it must not go stale
            _results(incremental, [pool[step][1].summary])
        scope, note = rng.choice(pool)
        key = (scope, note.id)
        if key in current and step % 3 == 0:
            incremental.remove(*key)
            del current[key]
        else:
            changed = note.with_changes(body=note.body + f" step{step}")
            incremental.add(scope, changed)
            current[key] = changed
    rebuilt = RecallIndex()
    rebuilt.add_many((key[0], note) for key, note in sorted(current.items()))
    queries = [note.summary for _, note in pool[:30]] + ["step7 step150", "nothing here"]
    assert sorted(incremental.keys()) == sorted(rebuilt.keys())
    assert _results(incremental, queries) == _results(rebuilt, queries)


_WORDS = ["alpha", "beta", "gamma", "delta", "deploy", "cache", "重跑", "gen-itgc", "weekend"]
_operations = st.lists(
    st.tuples(
        st.booleans(),  # True: add or replace, False: remove
        st.sampled_from(["project", "user"]),
        st.integers(0, 5),
        st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4),
        st.lists(st.sampled_from(_WORDS), max_size=12),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(_operations)
def test_any_sequence_of_changes_equals_a_rebuild(
    operations: list[tuple[bool, Scope, int, list[str], list[str]]],
) -> None:
    index = RecallIndex()
    current: dict[tuple[Scope, str], Note] = {}
    queries = [" ".join(_WORDS[:3]), "deploy cache", "重跑gen-itgc", "weekend alpha"]
    for is_add, scope, number, summary, body in operations:
        _results(index, queries)  # what queries keep between changes must not go stale
        key = (scope, f"note-{number}")
        if is_add:
            note = Note(key[1], " ".join(summary), " ".join(body), (summary[0],))
            index.add(scope, note)
            current[key] = note
        else:
            assert index.remove(*key) == (key in current)
            current.pop(key, None)
    rebuilt = RecallIndex()
    rebuilt.add_many((scope, note) for (scope, _), note in current.items())
    assert _results(index, queries) == _results(rebuilt, queries)


def test_a_short_note_is_all_topic_but_its_summary_or_tags_must_match() -> None:
    index = RecallIndex()
    index.add_many(
        [
            (
                "project",
                Note("short", "Thanks, Mel!", "I ran a charity race for the shelter.", ("Mel",)),
            ),
            ("project", Note("untagged", "Thanks!", "I ran a charity race for the shelter.")),
            ("project", Note("pad", "Weekly notes", "Nothing to report this week.", ("Mel",))),
        ]
    )
    # The body of a short note counts; a note with no summary or tag match never attaches.
    assert ids(index.recall("When did Mel run a charity race?")) == ["short"]


def test_an_edited_short_body_shows_in_the_next_recall() -> None:
    short = Note("short", "Thanks, Mel!", "I ran a charity race for the shelter.", ("Mel",))
    index = RecallIndex()
    index.add_many(
        [
            ("project", short),
            ("project", Note("pad", "Weekly notes", "Nothing to report this week.", ("Mel",))),
        ]
    )
    message = "When did Mel run a charity race?"
    assert ids(index.recall(message)) == ["short"]  # through its body words, now remembered
    index.add("project", short.with_changes(body="Nothing new on the garden."))
    assert index.recall(message) == []
    index.add("project", short)
    assert ids(index.recall(message)) == ["short"]


def test_a_short_body_edited_away_is_not_read_from_memory() -> None:
    # Another note still holds the old body's words: only the note's new body may be read.
    short = Note("short", "Thanks, Mel!", "I ran a charity race for the shelter.", ("Mel",))
    index = RecallIndex()
    index.add_many(
        [
            ("project", short),
            ("project", Note("pad", "Weekly notes", "Nothing to report this week.", ("Mel",))),
            ("project", Note("race", "Weekly notes", "I ran a charity race for the shelter too.")),
        ]
    )
    message = "When did Mel run a charity race?"
    assert ids(index.recall(message)) == ["short"]
    index.add("project", short.with_changes(body="Nothing new on the garden."))
    assert index.recall(message) == []
    assert index.remove("project", "short")
    index.add("project", short.with_changes(id="other", body="Nothing new on the garden."))
    assert index.recall(message) == []


def test_an_edited_summary_is_judged_anew_by_the_gate(small: RecallIndex) -> None:
    message = "how should I style the pricing cards?"
    assert ids(small.recall(message)) == ["pricing-borderless-3fa"]  # its topic now memoised
    longer = PRICING.with_changes(
        summary="Pricing cards use fills, not borders, as the Halvorsen Quimby Zephyr "
        "Ostrander Brackwell Tillinghast Vasquez audit of kerning and gutters advised"
    )
    small.add("project", longer)
    rebuilt = index_of(
        ("project", longer),
        ("project", K8S),
        ("project", BODY_ONLY),
        ("project", ITGC),
        ("user", JAPANESE),
    )
    assert small.recall(message) == rebuilt.recall(message) == []
    small.add("project", PRICING)
    assert ids(small.recall(message)) == ["pricing-borderless-3fa"]


def test_everyday_words_together_name_a_topic_one_alone_does_not() -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("project", Note("deps", "Ask before adding a new dependency", "Why, size, licence.")),
            ("project", Note("numbers", "Numbers are formatted with the user's locale", "Intl.")),
            ("project", Note("deploy", "Deploys happen on Tuesdays", "Release train.")),
        ]
    )
    assert ids(index.recall("can I add a new dependency for date parsing?")) == ["deps"]
    assert ids(index.recall("format the numbers with commas")) == ["numbers"]
    assert index.recall("can I add a comment here?") == []
    assert index.recall("what's the number of the ticket?") == []


def test_short_notes_judged_together_each_read_with_its_own_body() -> None:
    # Several short notes fail on their summary and tags at once: each is judged with the body
    # words of its own note, whatever lies between them (an empty body, a removed note).
    index = RecallIndex()
    index.add_many(
        [
            (
                "project",
                Note("race", "Thanks, Mel!", "I ran a charity race for the shelter.", ("Mel",)),
            ),
            ("project", Note("empty", "Thanks, Mel!", "", ("Mel",))),
            ("project", Note("gone", "Thanks, Mel!", "Nothing to see.", ("Mel",))),
            (
                "project",
                Note("bread", "Thanks, Mel!", "We baked bread at the garden party.", ("Mel",)),
            ),
            ("project", Note("pad", "Weekly notes", "Nothing to report this week.", ("Mel",))),
        ]
    )
    assert index.remove("project", "gone")
    for _ in range(2):  # read anew, then remembered
        assert ids(index.recall("When did Mel run a charity race?")) == ["race"]
        assert ids(index.recall("Did Mel bake bread at the garden party?")) == ["bread"]


def test_search_takes_turns_with_the_gate_within_its_bounds() -> None:
    # Per-message recall attaches as many notes as the gate chose, the gate's first note
    # first, the others taken in turn from the gate's order and the search order; every one
    # reaches minScore, matches in its summary or tags, and is not excluded.
    notes = synthetic_notes(400, seed=5)
    index = index_of(*notes)
    by_id = {note.id: note for _, note in notes}
    tokenizer = Tokenizer()
    rng = random.Random(5)
    settings = RecallSettings(min_score=1.2, per_turn=3)
    attached_two = 0
    for _ in range(150):
        words = [word for _, note in rng.sample(notes, 3) for word in note.summary.split()[:2]]
        message = " ".join(words)
        excluded = {rng.choice(notes)[1].id}
        hits = index.recall(message, exclude=excluded, settings=settings)
        assert len(hits) <= 3
        attached_two += len(hits) >= 2
        said = {term for group in tokenizer.query_terms(message) for term in group}
        for hit in hits:
            note = by_id[hit.id]
            assert hit.id not in excluded
            assert hit.score >= settings.min_score
            head = set(tokenizer.tokens(note.summary + " " + " ".join(note.tags)))
            assert head & said, (message, hit.id)
        if hits:
            one = index.recall(message, exclude=excluded, settings=RecallSettings(per_turn=1))
            assert [hit.id for hit in one] == [hits[0].id]  # the gate's first leads
    assert attached_two > 10  # the turns were taken


def test_search_never_brings_in_a_note_matching_only_in_its_body() -> None:
    index = index_of(
        ("project", K8S),
        ("project", Note("k8s-upgrades-2b0", "Kubernetes upgrades happen on Tuesdays", "Ok.")),
        (
            "project",
            Note(
                "style-4d1",
                "How release notes are written",
                "kubernetes cluster upgrades week " * 30,
            ),
        ),
        ("project", PRICING),
    )
    hits = index.recall("kubernetes cluster upgrades this week")
    assert "style-4d1" not in ids(hits)
    assert "style-4d1" in ids(index.search("kubernetes cluster upgrades this week", 2))


def test_a_message_about_a_pr_attaches_the_note_about_prs() -> None:
    index = RecallIndex()
    index.add_many(
        [
            ("user", Note("pr-size", "Prefers small PRs under 400 lines", "Split refactors.")),
            ("project", Note("oncall", "On-call rota: Ana this week, then Ben", "PagerDuty.")),
            ("project", Note("logging", "Use the structured logger", "No print statements.")),
        ]
    )
    assert [hit.id for hit in index.recall("this PR is 1,200 lines, can you review it?")] == [
        "pr-size"
    ]
