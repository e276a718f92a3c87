"""Ids, summaries, tags and types (spec 01.1)."""

from __future__ import annotations

import pytest

from oharness.errors import LimitError, ValidationError
from oharness.notes.ids import (
    check_id,
    check_type,
    clean_body,
    clean_summary,
    clean_tags,
    generate_id,
    is_valid_id,
    random_hex,
    slugify,
)


@pytest.mark.parametrize("value", ["a", "A", "0", "pricing-borderless-3fa", "Foo_Bar-1", "x" * 128])
def test_valid_ids(value: str) -> None:
    assert is_valid_id(value)
    assert check_id(value) == value


@pytest.mark.parametrize(
    "value", ["", "-a", "_a", "a.b", "a/b", "../x", "/abs", "a b", "a\x00b", "x" * 129, "é"]
)
def test_invalid_ids(value: str) -> None:
    assert not is_valid_id(value)
    with pytest.raises(ValidationError, match="invalid note id"):
        check_id(value)


def test_slug_uses_ascii_letters_and_digits_cut_at_a_word_boundary() -> None:
    assert slugify("Pricing cards use fills, not borders") == "pricing-cards-use-fills-not-borders"
    long = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    slug = slugify(long)
    assert len(slug) <= 48 and long.replace(" ", "-").startswith(slug)
    assert not slug.endswith("-")
    assert slugify("\u0301\u0301") == "note"
    assert slugify("Café crème") == "cafe-creme"
    assert slugify("x" * 60) == "x" * 48


def test_generated_ids_are_slug_dash_three_hex() -> None:
    note_id = generate_id("Deploys happen on Tuesdays", lambda n: "3fa")
    assert note_id == "deploys-happen-on-tuesdays-3fa"
    random_id = generate_id("Deploys", random_hex)
    assert is_valid_id(random_id) and len(random_id.rsplit("-", 1)[1]) == 3
    assert random_id == random_id.lower()


def test_tag_cleaning() -> None:
    assert clean_tags("Design, pricing  UI,,design") == ("design", "pricing", "ui")
    assert clean_tags([" A ", "b,c", "Ünï"]) == ("a", "b", "c", "Ünï")
    assert clean_tags([]) == ()
    assert clean_tags(None) == ()
    with pytest.raises(ValidationError):
        clean_tags([1])  # type: ignore[list-item]


def test_summary_rules() -> None:
    assert clean_summary("  One line  ") == "One line"
    for bad in ["", "   ", "two\nlines", "x" * 201]:
        with pytest.raises(ValidationError):
            clean_summary(bad)
    assert clean_summary("x" * 200) == "x" * 200


def test_types() -> None:
    assert check_type(None) is None
    for name in ["user", "feedback", "project", "reference"]:
        assert check_type(name) == name
    with pytest.raises(ValidationError, match="unknown note type"):
        check_type("todo")


def test_body_rules() -> None:
    assert clean_body("a\r\nb", 100) == "a\nb\n"
    with pytest.raises(ValidationError):
        clean_body("  \n", 100)
    with pytest.raises(LimitError, match="maxNoteBytes"):
        clean_body("é" * 60, 100)


@pytest.mark.parametrize(
    ("summary", "slug"),
    [
        ("部署流程使用蓝绿发布", "bu-shu-liu-cheng-shi-yong-lan-lu-fa-bu"),
        ("テストはpytestで実行する", "tesutoha-pytest-de-shi-xing-suru"),
        ("배포는 화요일", "bae-po-neun-hwa-yo-il"),
        ("Деплой по вторникам", "deploy-po-vtornikam"),
        ("Überprüfung der Größe", "uberprufung-der-grosse"),
        ("重跑gen-itgc后", "zhong-pao-gen-itgc-hou"),
    ],
)
def test_summaries_in_other_scripts_get_readable_ascii_ids(summary: str, slug: str) -> None:
    assert slugify(summary) == slug
    note_id = generate_id(summary, lambda n: "3fa")
    assert is_valid_id(note_id) and note_id.isascii() and note_id == f"{slug}-3fa"


def test_a_long_cjk_summary_is_cut_at_a_syllable() -> None:
    slug = slugify("部署" * 40)
    assert len(slug) <= 48 and slug.startswith("bu-shu-") and not slug.endswith("-")
