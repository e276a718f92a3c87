"""The tidy-up review (待整理) and merges (spec 05): findings, dismissals, merge, consolidation.

Library API (values, for the CLI, the daemon and the page):

- :func:`open_review` → :class:`ReviewService`: ``review(scope)`` → findings,
  ``dismiss(finding_id)``, ``plan(ids)`` → :class:`MergePlan`, ``draft(plan, kind)`` →
  :class:`MergeDraft`, ``apply(plan, draft)`` → :class:`MergeResult`;
- pure parts: :func:`review_notes`, :func:`plan_merge`, :func:`concat_draft`,
  :func:`merge_writes`, :func:`sanitise_draft`;
- background consolidation: :mod:`oharness.review.consolidate`.

Modules: ``review_service`` (:class:`ReviewService`, the I/O around the pure parts),
``findings`` (the review list), ``topics`` (same-topic groups), ``missing_paths`` (file paths a note
names), ``merge`` (the merge plan and writes, pure), ``drafting`` (the small model's draft),
``dismissals`` (dismissed findings, this machine only), ``consolidate`` (background
consolidation).
"""

from oharness.review.drafting import DraftModel, sanitise_draft
from oharness.review.findings import FINDING_KINDS, Finding, ScopeNotes, review_notes
from oharness.review.merge import MergeDraft, MergePlan, concat_draft, merge_writes, plan_merge
from oharness.review.review_service import BatchCommitter, MergeResult, ReviewService, open_review

__all__ = [
    "FINDING_KINDS",
    "BatchCommitter",
    "DraftModel",
    "Finding",
    "MergeDraft",
    "MergePlan",
    "MergeResult",
    "ReviewService",
    "ScopeNotes",
    "concat_draft",
    "merge_writes",
    "open_review",
    "plan_merge",
    "review_notes",
    "sanitise_draft",
]
