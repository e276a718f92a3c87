"""The demo's sample memory: notes a coding agent and its user would write on a web shop.

Bodies name other notes as ``{key}``; :func:`body_text` turns that into ``[[id]]`` once the
note behind the key exists (ids end in random hex, so links are filled in as notes are
created, in the order below). ``[[staging-runbook]]`` is left dangling on purpose: a note
someone meant to write, which the page marks and the tidy-up list reports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from oharness.types import Scope

DAY_MS: Final = 86_400_000
_KEY: Final = re.compile(r"\{([a-z-]+)\}")


@dataclass(frozen=True)
class SampleNote:
    """One sample note; ``age_days`` is how long ago it was written, ``recalls`` its uses."""

    key: str
    scope: Scope
    type: str
    summary: str
    body: str
    tags: tuple[str, ...] = ()
    age_days: float = 7.0
    recalls: int = 0


NOTES: Final[tuple[SampleNote, ...]] = (
    SampleNote(
        "admin",
        "project",
        "project",
        "The old admin panel ran on Django 3.2",
        "The admin panel was rewritten as part of the storefront in the spring; the Django "
        "app under legacy/admin is no longer deployed.\n",
        ("history",),
        age_days=130,
    ),
    SampleNote(
        "checklist",
        "project",
        "reference",
        "Release checklist: tag, changelog, staging smoke test",
        "1. Tag the release (`vYYYY.MM.N`).\n2. Move the Unreleased section of CHANGELOG.md "
        "under the tag.\n3. Deploy to staging and run `make smoke`; the steps are in "
        "[[staging-runbook]].\n4. Announce in #releases with the changelog link.\n",
        ("release",),
        age_days=21,
        recalls=6,
    ),
    SampleNote(
        "deploys",
        "project",
        "project",
        "Deploys go out on Tuesdays at noon",
        "The release train leaves on Tuesday at 12:00 UTC.\nHotfixes may go out any day, "
        "with a second reviewer.\nBefore a deploy, walk through {checklist}.\n",
        ("release", "deploy"),
        age_days=20,
        recalls=14,
    ),
    SampleNote(
        "gateway",
        "project",
        "reference",
        "Payments go through the adapter in billing/gateway.py",
        "Every call to the payment provider goes through `billing/gateway.py`, which adds "
        "idempotency keys and retries. Its sandbox is configured in `config/billing.toml`.\n",
        ("payments",),
        age_days=18,
        recalls=9,
    ),
    SampleNote(
        "no-sync-payments",
        "project",
        "feedback",
        "Never call the payment provider from a request handler",
        "Enqueue a `charge` job instead and answer 202; the worker calls {gateway}.\n\n"
        "**Why:** a slow provider once held every web worker for 40 seconds at checkout.\n",
        ("payments", "checkout"),
        age_days=15,
        recalls=7,
    ),
    SampleNote(
        "migrations",
        "project",
        "project",
        "Database migrations use Alembic, one per pull request",
        "Write the migration with `alembic revision --autogenerate`, read it, and keep it "
        "reversible. Never edit a migration that is on main.\n",
        ("database",),
        age_days=12,
        recalls=4,
    ),
    SampleNote(
        "flags",
        "project",
        "project",
        "Feature flags live in config/flags.toml",
        "A flag is removed within two sprints of reaching 100 %; the flag's owner is named "
        "next to it. Checkout flags are read through {gateway} settings, not directly.\n",
        ("config",),
        age_days=10,
        recalls=3,
    ),
    SampleNote(
        "integration",
        "project",
        "project",
        "Integration tests need Docker running",
        "`make test-int` starts Postgres and Redis in containers; without Docker it fails "
        "at the first fixture.\n",
        ("testing", "docker"),
        age_days=9,
        recalls=2,
    ),
    SampleNote(
        "pytest-a",
        "project",
        "feedback",
        "Run pytest before pushing",
        "Run `pytest -x -q` before every push; the CI queue is long in the afternoon.\n",
        ("testing",),
        age_days=8,
        recalls=5,
    ),
    SampleNote(
        "pytest-b",
        "project",
        "feedback",
        "Run the pytest suite before every push",
        "The user asked again to run the whole suite locally first: a red CI run blocks the "
        "release train ({deploys}).\n",
        ("testing",),
        age_days=2,
        recalls=1,
    ),
    SampleNote(
        "errors",
        "project",
        "reference",
        "API errors use RFC 9457 problem details",
        "Error responses are `application/problem+json` with `type`, `title`, `status` and "
        "`detail`; see `api/errors.py` for the helper. Payment failures add a `declineCode` "
        "(see {no-sync-payments}).\n",
        ("api",),
        age_days=6,
        recalls=2,
    ),
    SampleNote(
        "short",
        "user",
        "user",
        "Prefers short answers with the code first",
        "Lead with the code change, then one or two sentences of why.\n",
        ("style",),
        age_days=25,
        recalls=21,
    ),
    SampleNote(
        "tools",
        "user",
        "user",
        "Works in Python 3.12 with uv; editor is Neovim",
        "Suggest `uv run` and `uv add` rather than pip; keep configuration in pyproject.toml.\n",
        ("tooling",),
        age_days=25,
        recalls=8,
    ),
    SampleNote(
        "tradeoffs",
        "user",
        "feedback",
        "Explain trade-offs as two or three bullet points",
        "Not paragraphs. Name the option you would pick and why, in one line (see {short}).\n",
        ("style",),
        age_days=14,
        recalls=6,
    ),
    SampleNote(
        "commits",
        "user",
        "user",
        "Writes commit messages in the imperative, under 72 characters",
        "First line imperative and short; the body says why, wrapped at 72.\n",
        ("git",),
        age_days=11,
        recalls=3,
    ),
)

#: The note both devices edit, each its own way: the conflict that waits on the page.
CONFLICT_KEY: Final = "deploys"
CONFLICT_LINE: Final = "The release train leaves on Tuesday at 12:00 UTC."
THIS_DEVICE_LINE: Final = "The release train leaves on Tuesday at 11:00 UTC, before lunch."
OTHER_DEVICE_LINE: Final = "The release train leaves on Tuesday at 14:00 UTC, after the stand-up."

#: A note updated once (its old version is a backup) and one deleted (a backup too).
UPDATED_KEY: Final = "migrations"
UPDATED_BODY: Final = (
    "Write the migration with `alembic revision --autogenerate`, read it, and keep it "
    "reversible (a `downgrade` that works). Never edit a migration that is on main.\n"
)
DELETED: Final = SampleNote(
    "freeze",
    "project",
    "project",
    "The checkout page is frozen until the spring sale ends",
    "No changes to checkout templates until the sale ends on Sunday.\n",
    ("checkout",),
    age_days=5,
)


#: A few files of the sample project, so the notes' paths point at something (``api/errors.py``
#: is left out: the tidy-up list shows a note naming a file that is gone).
PROJECT_FILES: Final[Mapping[str, str]] = {
    "README.md": "# Tidewater shop\n\nStorefront, checkout and billing.\n",
    "CHANGELOG.md": "# Changelog\n\n## Unreleased\n",
    "billing/gateway.py": '"""The one way to the payment provider: idempotency keys, retries."""\n',
    "config/billing.toml": '[sandbox]\nbase_url = "https://sandbox.payments.invalid"\n',
    "config/flags.toml": '[flags]\nnew_checkout = { owner = "mia", rollout = 100 }\n',
}


#: What the other device writes while the demo runs (it reaches the page at the next sync).
LATER_NOTE: Final = SampleNote(
    "later",
    "project",
    "project",
    "Checkout sends receipts through the mailer queue",
    "Receipts are queued in `mail/outbox` and sent by the mailer worker; a failed send is "
    "retried for a day.\n",
    ("checkout", "email"),
    age_days=0,
)


def body_text(note: SampleNote, ids: Mapping[str, str]) -> str:
    """The note's body with each ``{key}`` replaced by a link to that note's id."""
    return _KEY.sub(lambda match: f"[[{ids[match.group(1)]}]]", note.body)
