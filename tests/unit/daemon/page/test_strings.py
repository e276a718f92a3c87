"""The page's catalogues: the same keys in every language, the required zh-CN labels."""

from __future__ import annotations

import re

import pytest

from oharness.daemon.page.i18n import LANGUAGES, Translator, catalogue, choose_language


def test_every_catalogue_has_the_same_keys() -> None:
    english = set(catalogue("en"))
    for language in LANGUAGES:
        assert set(catalogue(language)) == english, language


def test_every_catalogue_has_the_same_placeholders() -> None:
    for key, text in catalogue("en").items():
        wanted = set(re.findall(r"{(\w+)}", text))
        for language in LANGUAGES:
            assert set(re.findall(r"{(\w+)}", catalogue(language)[key])) == wanted, key


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
