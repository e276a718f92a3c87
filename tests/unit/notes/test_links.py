"""Link forms (notes/links.py): by id, by id without its hash suffix, by exact summary."""

from __future__ import annotations

from oharness.notes.links import LinkIndex, ResolvedLink, extract_links, id_stem
from oharness.types import Scope

NOTES: list[tuple[Scope, str, str]] = [
    ("project", "payments-go-through-the-adapter-3fa", "Payments go through the adapter"),
    ("project", "deploys-on-tuesday-a1b", "Deploys happen on Tuesday"),
    ("project", "deploys-on-tuesday-c2d", "Deploys happen on Tuesday"),
    ("user", "prefers-short-answers-9e0", "Prefers short answers"),
    ("user", "payments-go-through-the-adapter-777", "My own payments note"),
    ("project", "handwritten", "A note named by hand"),
]


def test_a_link_resolves_by_its_full_id_project_first() -> None:
    index = LinkIndex(NOTES)
    found = index.resolve("payments-go-through-the-adapter-777")
    assert found == ResolvedLink(
        "payments-go-through-the-adapter-777", "user", "payments-go-through-the-adapter-777"
    )
    assert index.resolve("handwritten").id == "handwritten"


def test_an_id_without_its_hash_suffix_resolves_when_unique_in_the_scope() -> None:
    index = LinkIndex(NOTES)
    # One project note and one user note share the stem: the project's wins, as with ids.
    found = index.resolve("payments-go-through-the-adapter")
    assert (found.scope, found.id) == ("project", "payments-go-through-the-adapter-3fa")
    assert index.resolve("prefers-short-answers").id == "prefers-short-answers-9e0"


def test_a_stem_two_notes_of_a_scope_share_is_ambiguous() -> None:
    found = LinkIndex(NOTES).resolve("deploys-on-tuesday")
    assert found.id is None and found.scope is None and found.ambiguous


def test_a_link_resolves_by_its_exact_summary() -> None:
    index = LinkIndex(NOTES)
    assert index.resolve("Prefers short answers").id == "prefers-short-answers-9e0"
    assert index.resolve("prefers short answers").id is None  # exact: same case
    assert index.resolve("Deploys happen on Tuesday").ambiguous


def test_anything_else_dangles() -> None:
    found = LinkIndex(NOTES).resolve("a-note-someone-meant-to-write")
    assert found == ResolvedLink("a-note-someone-meant-to-write", None)
    assert not found.ambiguous


def test_the_stem_is_the_generated_suffix_only() -> None:
    assert id_stem("deploys-tuesday-3fa") == "deploys-tuesday"
    assert id_stem("handwritten") is None
    assert id_stem("release-v2") is None
    assert id_stem("-abc") is None


def test_links_are_extracted_in_every_form_trimmed_and_once() -> None:
    body = "See [[deploys-on-tuesday]], [[ Prefers short answers ]] and [[deploys-on-tuesday]].\n"
    body += "Not a link: [[two\nlines]], [[]], [[a [nested] one]].\n"
    assert extract_links(body) == ("deploys-on-tuesday", "Prefers short answers")
