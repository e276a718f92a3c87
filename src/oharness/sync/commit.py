"""The commit stage of a sync round: upload the round's changes and move the position.

Uploads go in commits of at most ``maxChangesPerCommit`` (:class:`~oharness.sync.upload.
Uploader`); each applied change is recorded in the base only after the server accepted it. The
manifest version last seen moves forward only when every remote change was handled: a refused
compare-and-swap or a failed upload keeps the old position, so the next delta lists it again.
"""

from __future__ import annotations

from dataclasses import dataclass

from oharness.sync.ancestor import HeldChange
from oharness.sync.sync_round import ScopeParts, SyncRound
from oharness.sync.upload import Position, Uploader, refuse_case_collisions


@dataclass(frozen=True)
class CommitOutcome:
    """What a round's commit left to do: notes refused as CAS races, and whether the base is
    behind its own commits (another machine committed in between)."""

    refused: list[str]
    behind: bool


def commit(parts: ScopeParts, rnd: SyncRound) -> CommitOutcome:
    """Upload ``rnd.uploads``, record what the server took, advance when nothing is left."""
    state, result, snapshot = rnd.state, rnd.result, rnd.listed
    uploads = refuse_case_collisions(rnd.uploads, state, result.rejected)
    outcome = Uploader(
        base=parts.base,
        client=parts.client,
        scope=parts.scope,
        protocol=parts.protocol,
        progress=parts.progress,
        check_cancelled=parts.check_cancelled,
    ).upload(uploads, state, rnd.quotas, Position(snapshot.version, snapshot.commit))
    for note_id, current in outcome.refused.items():
        # The server said where the note is now: the next round plans against that.
        state.held[note_id] = HeldChange(current or "", None, deleted=current is None)
    result.pushed.extend(outcome.pushed)
    result.rejected.extend(outcome.rejected)
    result.errors.extend(outcome.errors)
    result.changed_anything = result.changed_anything or bool(outcome.refused or outcome.rejected)
    if rnd.complete and not outcome.refused and not outcome.errors:
        state.version, state.commit = outcome.position.version, outcome.position.commit
        state.generation = outcome.generation or snapshot.generation or state.generation
        state.protocol = parts.protocol
        state.restoring = False
        state.sealed = parts.client.sealed
    result.version = state.version
    result.conflicts = sorted(parts.conflicts.ids())
    parts.base.save(state)
    return CommitOutcome(sorted(outcome.refused), bool(outcome.pushed) and not outcome.claimed)
