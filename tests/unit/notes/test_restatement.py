"""When new text states a note's fact (and may replace it), and what it would drop."""

from __future__ import annotations

import pytest

from oharness.notes.restatement import missing_facts, restates, same_fact, words_match

SAME = [
    ("billing deploys Monday 8:00", "Billing deploys on Monday at 08:00."),
    ("The billing service deploys every Monday at 8:00.", "billing service deploys Monday 8:00"),
    ("Biling deploys on Monday at 8:00", "Billing deploys on Monday at 8:00"),
    ("Staging DB is Postgres 15", "staging db is postgres 15!"),
    ("部署在周一8:00", "部署在周一 8:00。"),
]
DISTINCT = [
    ("billing deploys Monday 8:00", "mailer deploys Monday 13:00"),
    ("billing deploys Monday 8:00", "billing deploys Monday 13:00"),
    ("billing deploys Monday 8:00", "billing deploys Tuesday 8:00"),
    ("Jon owns payroll", "John owns payroll"),
    ("Alice reviews the API changes", "Bob reviews the API changes"),
    ("Staging DB is Postgres 15", "Staging DB is Postgres 16"),
    ("部署在周一8:00", "部署在周二8:00"),
    ("billing deploys Monday 8:00", "billing never deploys Monday 8:00"),
]


@pytest.mark.parametrize(("old", "new"), SAME)
def test_restatements_state_the_same_fact(old: str, new: str) -> None:
    assert same_fact(old, new) and same_fact(new, old)
    assert restates(old, new) and missing_facts(old, new) == []


@pytest.mark.parametrize(("old", "new"), DISTINCT)
def test_distinct_facts_are_never_the_same(old: str, new: str) -> None:
    assert not same_fact(old, new) and not restates(old, new)


def test_an_addition_restates_but_a_negation_or_a_change_does_not() -> None:
    old = "Release notes are written in the CHANGELOG file."
    assert restates(old, old + " Keep a date.") and not same_fact(old, old + " Keep a date.")
    assert not restates(old, "Release notes are not written in the CHANGELOG file.")
    assert not restates(old, "Release notes don't go in the CHANGELOG file.")
    assert not restates(old + " Keep a date.", old)  # the date rule would be lost


def test_missing_facts_names_what_an_update_would_drop() -> None:
    old = "billing deploys Monday 8:00; mailer deploys Monday 13:00"
    assert missing_facts(old, "billing deploys Monday 8:00") == ["mailer", "13:00"]
    assert missing_facts(old, "Mailer: Monday 13:00. Billing: Monday 08:00, deploys both.") == []
    assert missing_facts("ship v1.4 on 2026-12-05", "ship v1.5 on 2026-12-05") == ["1.4"]


def test_words_match_endings_and_typos_only() -> None:
    assert words_match("deploy", "deploys") and words_match("deployed", "deploying")
    assert words_match("staging", "stagging")
    assert not words_match("mailer", "billing") and not words_match("monday", "sunday")
    assert not words_match("#8:00", "#08:00") and words_match("#8:00", "#8:00")
