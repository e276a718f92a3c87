"""The page's catalogues: the same keys in every language, the required zh-CN labels."""

from __future__ import annotations

import pytest

from oharness.daemon.page.i18n import (
    FORMAT_SPECS,
    LANGUAGES,
    Translator,
    catalogue,
    choose_language,
    message_texts,
    placeholders,
    plural_categories,
)


def test_every_catalogue_has_the_same_keys() -> None:
    english = set(catalogue("en"))
    for language in LANGUAGES:
        assert set(catalogue(language)) == english, language


def test_every_catalogue_has_the_same_placeholders() -> None:
    for key, message in catalogue("en").items():
        wanted = set().union(*(placeholders(text) for text in message_texts(message)))
        for language in LANGUAGES:
            other = catalogue(language)[key]
            for text in message_texts(other):
                assert placeholders(text) <= wanted, (language, key, text)
            found = set().union(*(placeholders(text) for text in message_texts(other)))
            assert {name for name, _ in found} == {name for name, _ in wanted}, (language, key)


def test_every_placeholder_format_is_known() -> None:
    for language in LANGUAGES:
        for key, message in catalogue(language).items():
            for text in message_texts(message):
                for name, spec in placeholders(text):
                    assert spec in FORMAT_SPECS, (language, key, name, spec)


def test_plural_messages_give_exactly_the_languages_plural_forms() -> None:
    """Babel's CLDR rules say which forms a language needs: English one/other, Chinese other."""
    assert plural_categories("en") == {"one", "other"}
    assert plural_categories("zh-CN") == {"other"}
    for language in LANGUAGES:
        for key, message in catalogue(language).items():
            if isinstance(message, str):
                continue
            english = catalogue("en")[key]
            assert not isinstance(english, str), key
            assert message["plural"] == english["plural"], key
            assert set(message) - {"plural"} == plural_categories(language), (language, key)


@pytest.mark.parametrize(
    ("language", "count", "text"),
    [
        ("en", 1, "1 conflict waits for you"),
        ("en", 0, "0 conflicts wait for you"),
        ("en", 5000, "5,000 conflicts wait for you"),
        ("zh-CN", 1, "1 个冲突等待你处理"),
        ("zh-CN", 2, "2 个冲突等待你处理"),
    ],
)
def test_one_message_function_picks_the_plural_form(language: str, count: int, text: str) -> None:
    assert Translator(language)("sync.conflicts_waiting", count=count) == text


def test_times_are_written_in_the_language() -> None:
    now = 1_800_000_000_000  # 2027-01-15 08:00 UTC
    english, chinese = Translator("en", now), Translator("zh-CN", now)
    assert english.moment(now) == "Jan 15, 2027, 8:00\u202fAM UTC"  # CLDR: a narrow space
    assert chinese.moment(now) == "2027年1月15日 08:00 UTC"
    assert english.ago(now - 3 * 3600_000) == "3 hours ago"
    assert chinese.ago(now - 3 * 3600_000) == "3小时前"
    assert english.ago(now - 10_000) == "just now"
    assert english("sync.pull_nothing_new", when=now, ago=now - 60_000).startswith(
        "nothing new at the last pass (Jan 15, 2027, 8:00\u202fAM UTC, 1 minute ago"
    )


def test_a_plural_message_without_its_number_is_an_error() -> None:
    with pytest.raises(TypeError, match="count"):
        Translator("en")("sync.conflicts_waiting")


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("sync.turn_off", "关闭云同步"),
        ("sync.now", "立即同步"),
        ("nav.tidy", "待整理"),
        ("tidy.suggest_merge", "生成合并建议"),
        ("tidy.merge_by_hand", "手动合并"),
    ],
)
def test_the_chinese_labels_of_the_spec(key: str, text: str) -> None:
    assert Translator("zh-CN")(key) == text


@pytest.mark.parametrize(
    ("query", "header", "expected"),
    [
        (None, None, "en"),
        ("zh-CN", None, "zh-CN"),
        ("zh-cn", "en", "zh-CN"),
        ("en", "zh-CN,zh;q=0.9", "en"),
        (None, "zh-CN,zh;q=0.9,en;q=0.8", "zh-CN"),
        (None, "zh-TW", "zh-CN"),
        (None, "fr-FR,en;q=0.5,zh;q=0.4", "en"),
        (None, "fr-FR,zh;q=0.5,en;q=0.4", "zh-CN"),
        (None, "zh;q=0,en", "en"),
        ("klingon", "de", "en"),
    ],
)
def test_choose_language(query: str | None, header: str | None, expected: str) -> None:
    assert choose_language(query, header) == expected
