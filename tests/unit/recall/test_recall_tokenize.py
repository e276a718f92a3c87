"""Tokeniser cases of spec 03.2."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oharness.errors import ConfigError
from oharness.recall.tokenize import Tokenizer, available_languages

ENGLISH = Tokenizer()


def test_words_are_case_folded_and_stemmed() -> None:
    assert ENGLISH.tokens("Running RUNS") == ["run", "run"]
    assert ENGLISH.tokens("Straße") == ["strass"]


def test_stop_words_do_not_score() -> None:
    assert ENGLISH.tokens("the and of it was there") == []
    assert ENGLISH.tokens("Don't use Caroline's car") == ["use", "carolin", "car"]


def test_cjk_runs_become_overlapping_pairs() -> None:
    assert ENGLISH.tokens("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert ENGLISH.tokens("缓存 清理") == ["缓存", "清理"]


def test_a_lone_cjk_character_stays_a_unigram() -> None:
    assert ENGLISH.tokens("后") == ["后"]
    assert ENGLISH.tokens("的") == []  # a grammatical particle on its own


def test_cjk_glued_to_latin_yields_pairs_and_identifier_parts() -> None:
    tokens = ENGLISH.tokens("重跑gen-itgc后")
    assert tokens == ["重跑", "genitgc", "gen", "itgc", "后"]


def test_japanese_and_korean_runs() -> None:
    assert "移行" in ENGLISH.tokens("データベースを移行する")
    assert "データ" not in ENGLISH.tokens("データ")  # pairs, not words
    assert ENGLISH.tokens("データ") == ["デー", "ータ"]
    assert ENGLISH.tokens("설정을 변경") == ["설정", "정을", "변경"]


def test_identifiers_are_split_and_kept_whole() -> None:
    assert ENGLISH.tokens("run_tests.py") == ["run_tests.py", "run", "test", "py"]
    assert ENGLISH.tokens("src/oharness/recall") == ["src/oharness/recall", "src", "ohar", "recal"]
    assert ENGLISH.tokens("gen-itgc") == ["genitgc", "gen", "itgc"]


def test_a_compound_is_one_word_however_it_is_written() -> None:
    # Joined and stemmed, so "on-call", "on_call", "onCall" and "oncall" all meet.
    for written in ("on-call", "on_call", "onCall", "oncall", "ON-CALL"):
        assert ENGLISH.tokens(written)[0] == "oncal", written
    assert ENGLISH.tokens("feature-flags")[0] == ENGLISH.tokens("featureflag")[0] == "featureflag"
    assert ENGLISH.tokens("can-not") == []  # a stop word written in parts stays one


def test_the_plural_of_an_acronym_meets_the_acronym() -> None:
    # No stemmer strips the "s" of a word without a vowel ("PRs", "SDKs", "PDFs").
    for plural, acronym in (("PRs", "PR"), ("SDKs", "SDK"), ("PDFs", "PDF"), ("APIs", "API")):
        assert ENGLISH.tokens(plural) == ENGLISH.tokens(acronym), plural
    assert ENGLISH.tokens("Ps") == ["ps"]  # one capital: no acronym


def test_camel_case_is_split_and_kept_whole() -> None:
    assert ENGLISH.tokens("fetchUserName") == ["fetchusernam", "fetch", "user", "name"]
    assert ENGLISH.tokens("HTTPServer") == ["httpserver", "http", "server"]


def test_full_width_latin_is_normalised() -> None:
    assert ENGLISH.tokens("ｇｅｎ－ｉｔｇｃ") == ["genitgc", "gen", "itgc"]


def test_unknown_language_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError) as caught:
        Tokenizer(["english", "klingon"])
    assert "memory.recall.languages" in caught.value.message
    assert "klingon" in caught.value.message
    assert "french" in caught.value.message  # the available ones are listed
    assert caught.value.details["key"] == "memory.recall.languages"
    assert "english" in available_languages()


def test_several_languages_give_each_distinct_stem_as_alternatives() -> None:
    both = Tokenizer(["english", "french"])
    assert both.tokens("pricing") == ["price", "pricing"]
    assert both.query_terms("pricing running pricing") == [("price", "pricing"), ("run", "running")]
    assert both.signature != ENGLISH.signature


def test_stop_words_of_configured_languages_only() -> None:
    french = Tokenizer(["english", "french"])
    assert french.tokens("la réunion est annulée") == ["réunion", "annulé", "annul"]
    # Unconfigured, French function words stay but count as the most common words.
    assert "la" in ENGLISH.tokens("la réunion")
    assert ENGLISH.prior("la") >= 0.25


def test_everyday_words_have_a_prior_and_topic_words_none() -> None:
    assert ENGLISH.prior(ENGLISH.tokens("weekend")[0]) > 0
    assert ENGLISH.prior(ENGLISH.tokens("kubernetes")[0]) == 0


def test_query_terms_are_distinct() -> None:
    assert ENGLISH.query_terms("deploy deploys Deploying") == [("deploy",)]


@given(st.text(max_size=200))
def test_counts_agree_with_tokens(text: str) -> None:
    assert ENGLISH.counts(text) == dict(Counter(ENGLISH.tokens(text)))


@given(st.text(max_size=200))
def test_terms_are_non_empty_and_case_folded(text: str) -> None:
    for term in ENGLISH.tokens(text):
        assert term
        assert term == term.casefold()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("शुभ रात्रि", ["शुभ", "रात्रि"]),  # Devanagari: vowel signs and virama stay inside
        ("डेटाबेस माइग्रेशन", ["डेटाबेस", "माइग्रेशन"]),
        ("স্টেজিং ডেটাবেস", ["স্টেজিং", "ডেটাবেস"]),  # Bengali
        ("தமிழ் சோதனை", ["தமிழ்", "சோதனை"]),  # Tamil
        ("ಕನ್ನಡ ಪರೀಕ್ಷೆ", ["ಕನ್ನಡ", "ಪರೀಕ್ಷೆ"]),  # Kannada
    ],
)
def test_combining_marks_stay_inside_words(text: str, words: list[str]) -> None:
    assert ENGLISH.tokens(text) == words


def test_thai_runs_become_overlapping_pairs_of_letter_clusters() -> None:
    # A consonant keeps its vowel and tone marks: ดี is one cluster, never ด + ี.
    assert ENGLISH.tokens("สวัสดี") == ["สวั", "วัส", "สดี"]
    assert ENGLISH.tokens("ทุก") == ["ทุก"]


def test_thai_glued_to_latin_splits_at_the_script_boundary() -> None:
    assert ENGLISH.tokens("ใช้pytestทดสอบ") == ["ใช้", "pytest", "ทด", "ดส", "สอ", "อบ"]


def test_thai_particles_alone_do_not_score() -> None:
    assert ENGLISH.tokens("นะ") == []
    assert ENGLISH.tokens("ค่ะ") == []


def test_everyday_thai_and_hindi_words_are_assumed_common() -> None:
    for term in ENGLISH.tokens("ขอบคุณ ครับ สวัสดี") + ENGLISH.tokens("धन्यवाद नमस्ते"):
        assert ENGLISH.prior(term) >= 0.25, term


@pytest.mark.parametrize(
    "languages",
    [("english",), ("english", "french"), ("german",), ("porter", "dutch"), ("hindi", "english")],
)
def test_priors_built_in_bulk_equal_those_of_each_word_as_a_message_says_it(
    languages: tuple[str, ...],
) -> None:
    from oharness.recall import words

    tokenizer = Tokenizer(languages)
    reference = Tokenizer(languages)
    foreign = frozenset().union(*words.STOP_WORDS.values()) - reference._stop
    expected: dict[str, float] = {}
    for word_list, share in (
        (words.COMMON_WORDS, 0.08),
        (words.CODE_WORDS, 0.08),
        (words.CJK_COMMON, 0.08),
        (words.VERY_COMMON_WORDS, 0.25),
        (words.SESSION_WORDS, 0.25),
        (foreign, 0.25),
        (words.UNSPACED_COMMON, 0.25),
    ):
        for word in word_list:
            for term in reference.tokens(word):
                expected[term] = max(share, expected.get(term, 0.0))
    assert tokenizer._priors == expected


def test_a_listed_word_normalised_in_messages_keeps_its_prior() -> None:
    # "ทำ" (to do) is listed with SARA AM, which NFKC splits in every text read.
    (term,) = ENGLISH.tokens("ทำ")
    assert term != "ทำ"
    assert ENGLISH.prior(term) == 0.25


_MESSAGE_TEXT = st.lists(
    st.sampled_from(
        [
            *"abcdefgXYZ ing-_./'0É\u0301ßǅ",
            *("running ", "pricing ", "the ", "getUser", "PDFs ", "10:00 ", "colour "),
            *("数据库", "สวัสดี", "शुभ रात्रि", "ｇｅｎ"),
        ]
    ),
    max_size=40,
).map("".join)


@pytest.mark.parametrize("languages", [("english",), ("english", "french")])
@given(text=_MESSAGE_TEXT)
def test_a_message_read_at_once_equals_its_words_read_one_by_one(
    languages: tuple[str, ...], text: str
) -> None:
    # The message path analyses its new words together; query_terms and phrases one by one.
    fresh = Tokenizer(languages)
    reference = Tokenizer(languages)
    assert fresh.message_terms(text) == (reference.query_terms(text), reference.phrases(text))
    assert fresh.message_terms(text) == (reference.query_terms(text), reference.phrases(text))


def test_the_word_memo_stays_bounded_and_answers_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    from oharness.recall import tokenize

    monkeypatch.setattr(tokenize, "_MAX_CACHED_CHUNKS", 8)
    tokenizer = Tokenizer()
    reference = Tokenizer()
    for number in range(30):
        text = f"word{number}x pricing cards number{number}y use fills, the deploys_{number}"
        assert tokenizer.message_terms(text) == (
            reference.query_terms(text),
            reference.phrases(text),
        )
        assert len(tokenizer._cache) <= 8 + 8
