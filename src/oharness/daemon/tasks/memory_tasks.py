"""What the three tasks do without a model (spec 10.1), over a workspace's memory service.

remember
    The content (already trimmed) is the note's body. The summary is its first sentence (up
    to the first ``.``, ``!``, ``?``, ``。``, ``！``, ``？`` followed by a space or the end, or
    the first line), without a leading Markdown heading or list marker, cut at a word
    boundary to 200 characters. The type follows :func:`infer_type`; the scope is the one
    sent, else the type's default (``user`` notes go to the user scope, every other type to
    the project). In ``workspace`` mode a note in the target scope is updated instead of a new
    one being added only when it is a likely duplicate (the same summary+tags similarity as
    review's "same topic") *and* the content restates its fact: its body aligns word for word
    and number for number with the content, which may add to it but drops and changes nothing
    (:func:`oharness.notes.restatement.restates`; "billing deploys Monday 8:00" and "mailer
    deploys Monday 13:00" stay two notes). Its summary and body are replaced, its type and tags
    kept, and the previous version backed up with reason ``task-update``. ``clean`` mode always
    adds a note (content identical to an existing note still writes nothing, as ``remember``
    never duplicates).
forget
    A query equal to an existing note id forgets that note. Otherwise the recall scorer ranks
    the notes (the ``memory(query)`` search) and those matched with full confidence are
    forgotten: every word of the query (tokenised and stemmed as recall does, stop words
    ignored) occurs in the note, at least one of them in its summary or tags. Each is backed
    up first (reason ``task-update``). More than :data:`FORGET_MAX_NOTES` matches refuses
    the whole task (``forget_failed``), nothing deleted: the query must be narrower.
dream
    Runs the review's same-topic merges with concatenated drafts through a :class:`Dreamer`
    (``oharness serve`` installs :class:`oharness.daemon.tasks.dream.ReviewDreamer`); a daemon built
    without one fails the task ``dream_failed`` and does not advertise the capability.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol, cast

from oharness.daemon.errors import TaskFailure
from oharness.daemon.tasks.lane import CancelToken, Task, TaskOutcome
from oharness.errors import NotFoundError, OHarnessError, ValidationError
from oharness.memory.memory_service import MemoryService
from oharness.memory.workspace import Workspace
from oharness.notes.format import Note
from oharness.notes.ids import check_id
from oharness.notes.restatement import missing_facts, restates
from oharness.notes.store import StoredNote
from oharness.types import NoteType, Scope, default_scope_for, parse_scope

FORGET_CANDIDATES: Final = 50
FORGET_MAX_NOTES: Final = 5
SUMMARY_CHARS: Final = 200
DUPLICATE_CANDIDATES: Final = 20

_SENTENCE_END: Final = re.compile(r"[.!?](?=\s|$)|[。！？]")
_LEADING_MARK: Final = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)+")
_USER_START: Final = re.compile(
    r"^(?:i\s+am|i'm|i\s+prefer|i\s+like|i\s+work|i\s+use|my\s|call\s+me|the\s+user\s)",
    re.IGNORECASE,
)
_FEEDBACK_WORDS: Final = re.compile(
    r"\b(?:don't|do\s+not|never|always|instead\s+of|avoid|please|should(?:n't)?|must(?:n't)?)\b",
    re.IGNORECASE,
)
_REFERENCE_MARK: Final = re.compile(r"https?://|\b(?:see|docs?\s+(?:at|in)|lives?\s+in)\b", re.I)

NotifyWrite = Callable[[Scope], None]


def first_sentence(content: str, limit: int = SUMMARY_CHARS) -> str:
    """The summary of a note written from ``content``: its first sentence, one line."""
    line = next((line for line in content.splitlines() if line.strip()), "")
    line = _LEADING_MARK.sub("", line).strip()
    match = _SENTENCE_END.search(line)
    sentence = line[: match.end()] if match else line
    sentence = " ".join(sentence.split())
    if len(sentence) <= limit:
        return sentence
    head = sentence[: limit - 1]
    if " " in head[limit // 2 :]:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip() + "…"


def infer_type(content: str) -> NoteType:
    """``user`` for statements about the person, ``feedback`` for instructions,
    ``reference`` for pointers to where information lives, else ``project``."""
    text = content.strip()
    if _USER_START.match(text):
        return "user"
    if _FEEDBACK_WORDS.search(text):
        return "feedback"
    if _REFERENCE_MARK.search(text):
        return "reference"
    return "project"


@dataclass(frozen=True)
class DreamOutcome:
    """What a consolidation pass did: merged entries, the scopes whose notes changed, and the
    merges refused (nothing changed for those)."""

    summary: str
    deduped_entries: tuple[dict[str, Any], ...]
    touched_scopes: tuple[Scope, ...]
    refused_entries: tuple[dict[str, Any], ...] = ()


class Dreamer(Protocol):
    """Runs review's same-topic merges with concatenated drafts through the merge path."""

    def dream(self, workspace: Workspace, cancel: CancelToken) -> DreamOutcome: ...


class Capturer(Protocol):
    """The capture pass of a Claude Code or Codex session (installed by ``oharness serve``)."""

    def capture(self, workspace: Workspace, payload: str) -> tuple[dict[str, Any], list[str]]: ...


class MemoryTasks:
    """The model-free work of remember, forget and dream for one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        dreamer: Dreamer | None = None,
        notify_write: NotifyWrite | None = None,
        capturer: Capturer | None = None,
    ) -> None:
        self.workspace = workspace
        self.dreamer = dreamer
        self.capturer = capturer
        self._notify = notify_write

    @property
    def service(self) -> MemoryService:
        return self.workspace.service

    def __call__(self, task: Task) -> TaskOutcome:
        try:
            if task.kind == "remember":
                return self.remember(task)
            if task.kind == "forget":
                return self.forget(task)
            if task.kind == "capture":
                return self.capture(task)
            return self.dream(task)
        except TaskFailure:
            raise
        except OHarnessError as exc:
            raise TaskFailure(f"{task.kind}_failed", exc.message) from exc

    def notify(self, scope: Scope) -> None:
        if self._notify is not None:
            self._notify(scope)

    # ---- remember --------------------------------------------------------------------------

    def remember(self, task: Task) -> TaskOutcome:
        content = task.payload
        summary = first_sentence(content)
        note_type = infer_type(content)
        scope = parse_scope(task.scope) if task.scope else default_scope_for(note_type)
        task.cancel.check()
        if task.context_mode != "clean":
            twin = self._likely_duplicate(summary, content, note_type, scope)
            if twin is not None:
                return self._update(task, twin, summary, content)
        result = self.service.remember(summary, content, type=note_type, scope=scope)
        if not result.changed:
            return TaskOutcome(
                {
                    "summary": f"Already remembered as {result.id} ({result.scope})",
                    "filesTouched": [],
                }
            )
        self.notify(result.scope)
        verb = "Added" if result.created else "Updated"
        return TaskOutcome(
            {"summary": f"{verb} {result.scope} note {result.id}", "filesTouched": [result.path]},
            (result.scope,),
        )

    def _likely_duplicate(
        self, summary: str, content: str, note_type: NoteType, scope: Scope
    ) -> StoredNote | None:
        recall = self.service.recall
        if recall is None or scope not in self.service.available_scopes():
            return None
        draft = Note("draft", summary, content, (), note_type, 0, 0)
        index = recall.index()
        store = self.service.store(scope)
        for hit in recall.search(summary, DUPLICATE_CANDIDATES):
            if hit.scope != scope:
                continue
            stored = store.get(hit.id)
            if stored is None or not index.likely_duplicate(draft, stored.note):
                continue
            if restates(stored.note.body, content) and not missing_facts(
                stored.note.summary, content
            ):
                return stored  # the same fact (perhaps with more): replacing loses nothing
        return None

    def _update(self, task: Task, twin: StoredNote, summary: str, content: str) -> TaskOutcome:
        store = self.service.store(twin.scope)
        with store.locked():
            store.refresh(full=True)
            latest = store.get(twin.id)
            if latest is None:
                raise TaskFailure("remember_failed", f"note {twin.id} vanished while updating it")
            task.cancel.check()
            self.service.backup(latest, "task-update")
            result = self.service.remember(summary, content, id=twin.id, scope=twin.scope)
        if not result.changed:
            return TaskOutcome({"summary": f"{twin.id} already says this", "filesTouched": []})
        self.notify(result.scope)
        return TaskOutcome(
            {
                "summary": f"Updated {result.scope} note {result.id} (a likely duplicate)",
                "filesTouched": [result.path],
            },
            (result.scope,),
        )

    # ---- forget ----------------------------------------------------------------------------

    def matches(self, query: str, scope: Scope | None) -> list[StoredNote]:
        """The notes a forget of ``query`` would delete (at most one more than the maximum)."""
        service = self.service
        scopes = [scope] if scope else service.available_scopes()
        try:
            check_id(query)
            exact = [s for c in scopes if (s := service.store(c).get(query)) is not None]
        except ValidationError:
            exact = []
        if exact:
            return exact
        recall = service.recall
        if recall is None:
            raise TaskFailure("forget_failed", "forget needs the recall index, not available here")
        tokenizer = recall.index().tokenizer
        groups = tokenizer.query_terms(query)
        if not groups:
            return []
        found: list[StoredNote] = []
        for hit in recall.search(query, FORGET_CANDIDATES):
            stored = service.store(hit.scope).get(hit.id) if hit.scope in scopes else None
            if stored is None:
                continue
            note = stored.note
            head = set(tokenizer.tokens(note.summary + "\n" + "\n".join(note.tags)))
            every = head | set(tokenizer.tokens(note.body))
            covered = all(any(term in every for term in group) for group in groups)
            if covered and any(term in head for group in groups for term in group):
                found.append(stored)
        return found

    def forget(self, task: Task) -> TaskOutcome:
        scope = parse_scope(task.scope) if task.scope else None
        doomed = self.matches(task.payload, scope)
        if len(doomed) > FORGET_MAX_NOTES:
            raise TaskFailure(
                "forget_failed",
                f"the query matches more than {FORGET_MAX_NOTES} notes; nothing was deleted. "
                "Make it more specific (or forget notes by id)",
            )
        removed: list[dict[str, Any]] = []
        touched: list[Scope] = []
        for stored in doomed:
            task.cancel.check()
            if not self.forget_one(stored):
                continue
            removed.append(
                {
                    "id": stored.id,
                    "scope": stored.scope,
                    "summary": stored.note.summary,
                    "filePath": str(stored.path),
                }
            )
            if stored.scope not in touched:
                touched.append(stored.scope)
            self.notify(stored.scope)
        count = len(removed)
        summary = f"Removed {count} note{'s' if count != 1 else ''}" if count else "Nothing matched"
        return TaskOutcome({"summary": summary, "removedEntries": removed}, tuple(touched))

    def forget_one(self, stored: StoredNote) -> bool:
        store = self.service.store(stored.scope)
        with store.locked():
            store.refresh(full=True)
            latest = store.get(stored.id)
            if latest is None:
                return False  # already gone
            self.service.backup(latest, "task-update")
            try:
                store.delete(stored.id)
            except NotFoundError:
                return False
        return True

    # ---- dream -----------------------------------------------------------------------------

    def dream(self, task: Task) -> TaskOutcome:
        if self.dreamer is None:
            raise TaskFailure(
                "dream_failed",
                "consolidation is not available in this daemon (it was started without a "
                "merge path); nothing was changed",
            )
        outcome = self.dreamer.dream(self.workspace, task.cancel)
        for scope in outcome.touched_scopes:
            self.notify(scope)
        return TaskOutcome(
            {
                "summary": outcome.summary,
                "dedupedEntries": list(outcome.deduped_entries),
                "refusedEntries": list(outcome.refused_entries),
            },
            tuple(outcome.touched_scopes),
        )

    # ---- capture ---------------------------------------------------------------------------

    def capture(self, task: Task) -> TaskOutcome:
        """A capture pass over a Claude Code or Codex transcript (see docs/capture.md)."""
        if self.capturer is None:
            raise TaskFailure(
                "capture_failed",
                "capture is not available in this daemon (it was started without it); the "
                "hook falls back to a background process",
            )
        result, scopes = self.capturer.capture(self.workspace, task.payload)
        for scope in scopes:
            self.notify(cast(Scope, scope))
        return TaskOutcome(result, tuple(scopes))
