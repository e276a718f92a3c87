"""The per-message gate: tags as names, related words, frame words, scripts, crowds of notes."""

from __future__ import annotations

import pytest
from recall_helpers import realistic_notes

from oharness.notes.format import Note
from oharness.recall.index import RecallIndex


def ids(index: RecallIndex, message: str) -> list[str]:
    return [hit.id for hit in index.recall(message)]


@pytest.fixture(params=[0, 500])
def folder(request: pytest.FixtureRequest) -> RecallIndex:
    index = RecallIndex()
    index.add_many(realistic_notes(request.param))
    return index


def test_a_tag_the_summary_does_not_use_names_the_topic(folder: RecallIndex) -> None:
    # "logging" is only a tag: the summary names the library. Two everyday words of a long
    # summary would not be enough; the tag the author gave the topic is.
    folder.add(
        "project",
        Note(
            "structlog-1",
            "Use structlog with JSON output in services; no print statements",
            "Loki parses the JSON lines.",
            ("logging", "python", "structlog"),
        ),
    )
    folder.add("project", Note("refunds-1", "Refunds within 30 days of payment", "Credit."))
    assert "structlog-1" in ids(folder, "add some logging to the payment service")
    assert ids(folder, "the logging is fine, thanks") == []


def test_a_note_in_another_script_is_found_through_its_tags(folder: RecallIndex) -> None:
    # A Japanese summary and English tags: an English message is measured against the
    # English part of the topic, not diluted by the Japanese pairs.
    folder.add(
        "project",
        Note(
            "ja-retention",
            "ログの保存期間は九十日です",
            "アプリケーションログは九十日後に自動削除される。",
            ("ログ", "保存期間", "logs", "retention"),
        ),
    )
    assert "ja-retention" in ids(folder, "what is the retention of the logs?")
    assert "ja-retention" in ids(folder, "ログの保存期間は?")


def test_a_related_word_completes_a_topic_but_never_names_one_alone() -> None:
    index = RecallIndex()
    index.add_many(realistic_notes(200))
    index.add("project", Note("uploads-1", "Uploads are limited to 25 MB per file", "Clear error."))
    index.add("project", Note("logs-1", "Log retention is ninety days", "Audit logs: a year."))
    assert "uploads-1" in ids(index, "what's the maximum size of uploads?")
    assert "logs-1" in ids(index, "how long do we keep logs?")
    assert ids(index, "keep going") == []
    assert ids(index, "no limit on that, just keep it") == []


def test_words_meaning_the_same_meet_at_full_weight() -> None:
    # A short form or a synonym names the topic as the note's own word does; a word that is
    # only related ("slow" and "latency") still never names one alone.
    index = RecallIndex()
    index.add_many(realistic_notes(200))
    index.add_many(
        ("project", Note(i, summary, "See the runbook.\n", tags, "project"))
        for i, summary, tags in (
            ("k8s-a01", "Kubernetes namespaces: one per team", ("platform",)),
            ("outage-a02", "Outage budget: 43 minutes a month for auth-gateway", ("slo",)),
            ("latency-a03", "Latency budget of the search API is 200 ms at p95", ("search",)),
        )
    )
    assert ids(index, "which k8s namespace is mine?") == ["k8s-a01"]
    assert ids(index, "how much downtime do we get per month?") == ["outage-a02"]
    assert ids(index, "this page is slow") == []


def test_pairs_across_two_chinese_words_do_not_drown_the_word_a_note_names() -> None:
    # "部署之前要做什么" pairs 署之, 前要, 要做, 做什 besides 部署: no note holds them; at full
    # weight they made the question too large a message for the note it names.
    index = RecallIndex()
    index.add_many(realistic_notes(15))
    summary, tags = "部署前必须运行数据库迁移脚本", ("部署", "迁移", "deploy", "migration")
    index.add("project", Note("deploy-mig-1a2", summary, "先跑 migrate。\n", tags))
    assert ids(index, "部署之前要做什么？") == ["deploy-mig-1a2"]
    assert ids(index, "再运行一次测试") == []
    assert ids(index, "今天先到这里吧，我们明天再继续") == []


def test_frame_words_of_a_memory_question_do_not_name_a_topic() -> None:
    index = RecallIndex()
    index.add_many(
        ("project", Note(f"decision-{n}", f"Decided to rename module {n}", "See the ticket."))
        for n in range(5)
    )
    index.add("project", Note("naming-1", "Naming: services use kebab-case", "api-gateway."))
    assert ids(index, "what did we decide?") == []
    assert ids(index, "do you remember what we discussed?") == []
    assert "naming-1" in ids(index, "what did we decide about the naming of services?")


def test_everyday_words_that_meet_many_summaries_attach_none_of_them() -> None:
    # Thirty notes hold "changing" and "file" in their summaries: the two everyday words do
    # not single one out; a distinctive word does.
    index = RecallIndex()
    index.add_many(
        (
            "project",
            Note(f"check-{n}", f"Check the file store dashboard {n} before changing quota", "."),
        )
        for n in range(30)
    )
    index.add("project", Note("quota-1", "Quota alerts go to Grafana", "Thresholds in yaml."))
    assert ids(index, "please review the changes in this file") == []
    assert "quota-1" in ids(index, "where do quota alerts go?")


def test_whole_tags_said_rank_a_note_above_one_sharing_the_same_words() -> None:
    # The decoys hold the same words in their summaries and tags, but in a compound tag and
    # more often in their bodies: the note whose whole tags the message says ranks first.
    index = RecallIndex()
    index.add_many(realistic_notes(300))
    index.add(
        "project",
        Note("sentry-1", "Errors go to Sentry", "On-call after 50 events.", ("sentry", "errors")),
    )
    for n in range(4):
        index.add(
            "project",
            Note(
                f"decoy-{n}",
                f"Errors of worker {n} go to Sentry",
                "Errors are sampled before they go to Sentry. Sentry keeps errors a month.",
                ("sentry-errors",),
            ),
        )
    assert ids(index, "where do errors get reported? Sentry?")[0] == "sentry-1"


def test_notes_far_below_a_clear_match_are_left_out() -> None:
    index = RecallIndex()
    index.add_many(realistic_notes(100))
    index.add(
        "project",
        Note("cards-1", "Pricing cards use fills, not borders", "Cards on the pricing page."),
    )
    index.add("project", Note("borders-1", "Borders are 1px grey", "Tables and inputs."))
    found = ids(index, "how should I style the borders of the pricing cards?")
    assert found[0] == "cards-1"
    assert "borders-1" not in found


LONG_SUMMARIES = [
    Note(
        "release-process-4c1",
        "Releases: bump the version with `hatch version minor`, tag vX.Y.Z, CI publishes to PyPI",
        "Update CHANGELOG.md, commit, push the tag; the publish workflow uploads to PyPI.",
        ("release", "pypi", "versioning"),
    ),
    Note(
        "pii-redaction-5b4",
        "Logs must not contain emails, IBANs or names; use the redact helper",
        "`redact.Email(e)` keeps the domain only.",
        ("logging", "privacy", "pii", "gdpr"),
    ),
]


@pytest.mark.parametrize("filler", [0, 500])
def test_a_long_summary_does_not_hide_its_note(filler: int) -> None:
    # A short question naming a note by a distinctive word of a long summary attaches it: the
    # summary's other words do not outweigh it. One word of a message mostly about something
    # else still does not attach such a note.
    index = RecallIndex()
    index.add_many(realistic_notes(filler))
    index.add_many(("project", note) for note in LONG_SUMMARIES)
    assert ids(index, "how do I cut a new release of this?") == ["release-process-4c1"]
    assert ids(index, "extract this loop into a helper function") == []


@pytest.mark.parametrize("filler", [0, 500])
def test_everyday_words_together_name_a_long_summary_one_alone_does_not(filler: int) -> None:
    index = RecallIndex()
    index.add_many(realistic_notes(filler))
    index.add(
        "project",
        Note(
            "commit-style-11d",
            "Commit messages in English, imperative mood, no emoji",
            "'Fix crash when GPS permission is revoked', not 'fixed stuff'. The changelog is "
            "built from them.",
            ("git", "commits", "conventions"),
        ),
    )
    assert ids(index, "commit this with the message 'fixed stuff'") == ["commit-style-11d"]
    assert ids(index, "commit and push") == []
