"""Running one seed: the schedule's steps against the world, the invariants after every step,
then quiescence (faults off, every device online, conflicts resolved, passes until nothing
changes) and the final invariants, idempotence included.

User writes go through the note store (as the memory tools, the page and editors end up doing:
one atomic write of the whole file); deletes through ``forget`` (which backs the note up);
conflicts through the resolver, as ``oharness sync resolve`` does."""

from __future__ import annotations

import random
import shutil
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from simoracle import Oracle
from simschedule import (
    BODY_LINES,
    PROXY_LIMITS,
    RESOLUTIONS,
    WAIT_HOURS,
    Fault,
    ScheduleShape,
    Step,
    generate_schedule,
)
from simworld import Device, SimulatedCrash, World

from oharness.errors import OHarnessError, SyncError
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.ids import generate_id
from oharness.sync.conflicts import ConflictBook, ConflictRecord
from oharness.sync.scope_sync import PassResult

#: memory.maxNotes when no step lowers it.
MAX_NOTES = 5000
#: Creations beyond this many ids become edits, so devices keep meeting on the same notes.
MAX_IDS = 5
#: Quiescence: rounds of passes (one per device) before "does not converge" is a failure.
MAX_ROUNDS = 12
#: From this round on, quiescence resolves every conflict by taking the cloud's version.
SETTLE_ROUND = 4


@dataclass
class SeedReport:
    """What one seed did, and what went wrong."""

    seed: int
    shape: ScheduleShape
    trace: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)

    @property
    def failed(self) -> bool:
        return bool(self.violations)

    def replay_command(self) -> str:
        return (
            f"OHARNESS_SIM_SEED={self.seed} OHARNESS_SIM_STEPS={self.shape.steps} "
            f"OHARNESS_SIM_DEVICES={self.shape.devices} "
            + ("OHARNESS_SIM_ENCRYPTED=1 " if self.shape.encrypted else "")
            + "pytest tests/simulation -k replay -s"
        )

    def describe(self) -> str:
        lines = [
            f"simulation seed {self.seed} failed ({self.shape.devices} devices, "
            f"{self.shape.steps} steps{', encrypted' if self.shape.encrypted else ''})",
            f"replay: {self.replay_command()}",
            "trace:",
            *(f"  {line}" for line in self.trace),
            "violations:",
            *(f"  {line}" for line in self.violations),
        ]
        return "\n".join(lines)


def run_seed(seed: int, shape: ScheduleShape, directory: Path, *, keep: bool = False) -> SeedReport:
    """Run one seed in ``directory`` (removed afterwards unless ``keep`` or it failed)."""
    report = SeedReport(seed, shape)
    schedule = generate_schedule(seed, shape)
    directory.mkdir(parents=True, exist_ok=True)
    with World(directory, seed, shape.devices, encrypted=shape.encrypted) as world:
        Runner(world, report, random.Random(seed * 7919 + 1)).run(schedule)
    if not keep and not report.failed:
        shutil.rmtree(directory, ignore_errors=True)
    return report


def _did(result: PassResult, refused: list[str] | None = None) -> str:
    """What a pass did; ``refused``: the changes the server refused during it."""
    parts = [
        f"{name} {values}"
        for name, values in (
            ("pushed", result.pushed),
            ("pulled", result.pulled),
            ("merged", result.merged),
            ("deleted here", result.deleted_here),
            ("conflicts", result.conflicts),
            ("errors", [error["code"] for error in result.errors]),
            ("rejected", [item["reason"] for item in result.rejected]),
            ("refused by the server", refused or []),
        )
        if values
    ]
    return "; ".join(parts) or "nothing to do"


def _idle(result: PassResult) -> bool:
    return not (
        result.pushed
        or result.pulled
        or result.merged
        or result.deleted_here
        or result.changed_anything
        or result.errors
        or result.rejected
    )


class Runner:
    """Carries out one schedule and checks the invariants."""

    def __init__(self, world: World, report: SeedReport, rng: random.Random) -> None:
        self.world = world
        self.report = report
        self.rng = rng
        self.oracle = Oracle(world)
        self.counter = 0
        self.step = 0
        self.notes: list[str] = []
        self.broken_edits: dict[tuple[int, str], bool] = {}
        #: The server ran an older release (protocol 1 only) at some point.
        self.downgraded = False
        world.on_interleave = self._interleaved_pass
        world.on_concurrent_edit = self._concurrent_edit

    def fail(self, message: str) -> None:
        self.report.violations.append(f"step {self.step}: {message}")

    def run(self, schedule: list[Step]) -> None:
        for index, step in enumerate(schedule):
            self.step = self.world.step = index
            self.notes = []
            try:
                self._repair_due()
                outcome = self._execute(step)
            except Exception as exc:  # anything the schedule did not expect is a finding
                outcome = f"unexpected {type(exc).__name__}: {exc}"
                self.fail(f"{outcome}\n{traceback.format_exc()}")
            extra = "".join(f"\n        {note}" for note in self.notes)
            self.report.trace.append(f"{index:3d}  {step}  ->  {outcome}{extra}")
            self.oracle.observe()
            for problem in self.oracle.check_step():
                self.fail(problem)
            if self.report.failed:
                return
        self._quiesce(len(schedule))

    def _execute(self, step: Step) -> str:
        device = self.world.devices[step.device]
        self.report.stats[step.kind] += 1
        if step.kind == "edit":
            return self._edit(device, step.edit, step.pick, step.line, "edit")
        if step.kind == "delete":
            return self._delete(device, step.pick)
        if step.kind == "recreate":
            return self._recreate(device, step.pick, step.choice)
        if step.kind == "sync":
            return self._sync(device, step)
        if step.kind == "offline":
            device.offline_until = self.step + step.duration
            return f"offline until step {device.offline_until}"
        if step.kind == "expire":
            self.world.server.clock.advance_days(self.world.server.tombstone_days + 1)
            return "tombstones older than the window expire at the next commit"
        if step.kind in ("reset", "restore"):
            self.oracle.resets.append(self.step)
        if step.kind == "reset":
            self.world.server.reset()
            return "storage emptied"
        if step.kind == "restore":
            return f"storage back at version {self.world.server.restore(step.pick)}"
        if step.kind == "break":
            name = device.break_note(step.pick, self.step + step.duration)
            if name is not None:
                self.broken_edits[(device.index, name)] = step.edit == "b"
            return f"{name} unreadable until step {self.step + step.duration}" if name else "none"
        if step.kind == "twin":
            return self._twin(device, self.world.devices[step.line])
        if step.kind == "maxnotes":
            device.limited_until = self.step + step.duration
            return f"memory.maxNotes below its note count for {step.duration} steps"
        if step.kind == "limit":
            self.world.proxy_limit = PROXY_LIMITS[step.pick]
            return f"proxy limit {self.world.proxy_limit}"
        if step.kind == "protocol":
            protocols = (1,) if step.choice == "old" else (1, 2)
            if self.world.server.cipher is not None:
                # A release older than sealed notes cannot serve an encrypted account at all:
                # the operator restarts the current one instead.
                protocols = (1, 2)
            self.downgraded |= protocols == (1,)
            self.world.server.deploy(protocols)
            return f"the server serves protocols {list(protocols)}"
        if step.kind == "wait":
            self.world.clock.advance_hours(WAIT_HOURS[step.pick])
            return "time passes"
        return self._resolve_step(step)

    def _repair(self, device: Device, name: str) -> str:
        """The person finishes a half-saved edit (now and then with a real change in it)."""
        edited = self.broken_edits.pop((device.index, name), False)
        suffix = f"finished by {self._tag(device)}\n".encode() if edited else b""
        before = parse_note_bytes(device.broken[name][0]).content_hash_without_id
        device.repair(name, suffix)
        note_id = name[: -len(".md")]
        self.oracle.record_edit(self.step, device, note_id, before, "repair")
        return f"{device.name} repaired {name}{' with an edit' if edited else ''}"

    def _repair_due(self, *, everything: bool = False) -> None:
        for device in self.world.devices:
            for name, (_, until) in sorted(device.broken.items()):
                if everything or until <= self.step:
                    self.notes.append(self._repair(device, name))

    def _twin(self, device: Device, other: Device) -> str:
        """Two clones of one repository: byte-identical note files appear on two devices."""
        tag = self._tag(device)
        now = self.world.clock()
        body = "".join(f"{tag} twin line {index}\n" for index in range(BODY_LINES))
        note = Note(generate_id(f"Twin {tag}", device.hex), f"Twin {tag}", body, (), None, now, now)
        data = serialise_note_bytes(note)
        for holder in (device, other):
            store = holder.workspace.service.store("project")
            if store.get_folded(note.id) is not None or len(self.oracle.ids) >= MAX_IDS + 3:
                return "no twin"
        for holder in (device, other):
            holder.workspace.service.store("project").save_bytes(note.id, data, create=True)
            self.oracle.record_edit(self.step, holder, note.id, None, "twin")
        return f"twin {note.id} on {device.name} and {other.name}"

    # ---- user actions --------------------------------------------------------------------

    def _tag(self, device: Device) -> str:
        self.counter += 1
        return f"{device.name}-{self.counter}"

    def _edit(self, device: Device, kind: str, pick: int, line: int, what: str) -> str:
        store = device.workspace.service.store("project")
        notes = sorted(store.notes(), key=lambda stored: stored.id)
        if kind == "create" and len(self.oracle.ids) >= MAX_IDS and notes:
            kind = "line"
        if kind != "create" and not notes:
            kind = "create"
        tag = self._tag(device)
        now = self.world.clock()
        if kind == "create":
            body = "".join(f"{tag} line {index}\n" for index in range(BODY_LINES))
            summary = f"Topic {tag}"
            typed = "project" if pick % 3 == 0 else None  # typed notes need protocol 2
            note = Note(generate_id(summary, device.hex), summary, body, ("sim",), typed, now, now)
            store.save(note, create=True)
            self.oracle.record_edit(self.step, device, note.id, None, f"{what}:create")
            return f"created {note.id}"
        note = notes[pick % len(notes)].note
        lines = note.body.splitlines() or [""]
        changes: dict[str, object] = {}
        if kind == "line":
            lines[line % len(lines)] = f"line {line % len(lines)} edited by {tag}"
        elif kind == "append":
            lines.append(f"appended by {tag}")
        elif kind == "summary":
            changes["summary"] = f"{note.summary.split(' (')[0]} ({tag})"
        else:
            toggled = f"t{pick % 4}"
            kept = tuple(t for t in note.tags if t != toggled)
            changes["tags"] = kept if toggled in note.tags else (*note.tags, toggled)
        edited = note.with_changes(body="\n".join(lines) + "\n", **changes)
        if edited.content_hash == note.content_hash:
            return f"{kind} of {note.id}: no change"
        store.save(edited.with_changes(updated_at=max(now, note.updated_at + 1)), create=False)
        before = note.content_hash_without_id
        self.oracle.record_edit(self.step, device, note.id, before, f"{what}:{kind}")
        return f"{kind} of {note.id}"

    def _delete(self, device: Device, pick: int) -> str:
        service = device.workspace.service
        notes = sorted(service.store("project").notes(), key=lambda stored: stored.id)
        if not notes:
            return "nothing to delete"
        note_id = notes[pick % len(notes)].id
        self.oracle.record_deletion(self.step, device, note_id)
        service.forget(note_id)
        return f"deleted {note_id}"

    def _recreate(self, device: Device, pick: int, how: str) -> str:
        """Re-create an id this device had and lost (from a backup, or new content); now and
        then an id it never had, as a person copying a note from another machine would."""
        service = device.workspace.service
        store = service.store("project")
        present = {stored.id.casefold() for stored in store.notes()}
        present |= {name[: -len(".md")].casefold() for name in device.broken}
        absent = sorted(i for i in self.oracle.ids if i.casefold() not in present)
        seen = [i for i in absent if i in self.oracle.disk(device).knew]
        candidates = seen if seen and pick % 4 else absent
        if not candidates:
            return "nothing to re-create"
        if how == "restore":
            records = [r for r in service.backups().recent(None) if r.note_id in candidates]
            if records:
                record = sorted(records, key=lambda r: r.backup_id)[pick % len(records)]
                assert record.note_id is not None
                service.restore(record.backup_id)
                self.oracle.record_edit(self.step, device, record.note_id, None, "restore")
                return f"restored {record.note_id} from {record.backup_id}"
        note_id = candidates[pick % len(candidates)]
        tag = self._tag(device)
        now = self.world.clock()
        body = "".join(f"{tag} re-created line {index}\n" for index in range(BODY_LINES))
        note = Note(note_id, f"Re-created ({tag})", body, ("sim",), None, now, now)
        store.save_bytes(note_id, serialise_note_bytes(note), create=True)
        self.oracle.record_edit(self.step, device, note_id, None, "re-create")
        return f"re-created {note_id}"

    # ---- sync ----------------------------------------------------------------------------

    def _sync(self, device: Device, step: Step) -> str:
        if not device.online:
            return "offline: no pass"
        rejections = len(device.transport.rejected)
        self.world.arm(step.fault, device)
        try:
            outcome, clean = self._pass(device, rejections)
        finally:
            fired = self.world.disarm()
            self.world.server.save_copy()
            if step.fault is not None:
                self.report.stats[f"{step.fault.label}:{'fired' if fired else 'idle'}"] += 1
        if step.recheck and clean and not fired:
            outcome += "; again: " + self._second_pass(device)
        return outcome

    def _pass(self, device: Device, rejections: int) -> tuple[str, bool]:
        """One pass under the armed fault: what it did, and whether it was clean."""
        store = device.workspace.service.store("project")
        limited = device.limited_until > self.step
        if limited:  # memory.maxNotes one below the note files the device holds
            store.refresh(full=True)
            store.max_notes = max(1, store.file_count() - 1)
            store.refresh(full=True)
            self.report.stats["maxNotes lowered"] += 1
        try:
            result = device.sync()
        except SimulatedCrash as crash:
            device.crash()
            self.report.stats["crash"] += 1
            return f"CRASH ({crash}); the device restarts from its disk", False
        except SyncError as exc:
            injected = self.world.armed is not None and self.world.armed.fired
            if not injected and not self._told_to_downgrade(exc):
                self.fail(f"the pass failed without an injected fault: {exc.code}: {exc.message}")
            self.report.stats[f"failed:{exc.code}"] += 1
            return f"failed: {exc.code}", False
        finally:
            if limited:
                store.max_notes = MAX_NOTES
                store.refresh(full=True)
        self._count(result)
        self._check_typed_named(device, result)
        self.oracle.last_pass[device.name] = self.step
        refused = device.transport.rejected[rejections:]
        # The pass after a lowered memory.maxNotes runs with the full limit again: it may
        # rightly move the note left out, so only a pass under the normal limit is "clean".
        clean = result.skipped is None and not result.errors and not result.rejected
        clean = clean and not refused and not limited
        return _did(result, refused), clean

    def _told_to_downgrade(self, exc: SyncError) -> bool:
        """A pass speaking protocol 2 to an older release is refused with 426 (the next pass
        reads the server's protocols again): a visible reason, not a finding."""
        if exc.code != "protocol_unsupported" or 2 in self.world.server.protocols:
            return False
        self.report.stats["protocol 2 refused (426)"] += 1
        return True

    def _check_typed_named(self, device: Device, result: PassResult) -> None:
        """Under protocol 1 every typed note here is named as not syncing, with the reason."""
        if device.protocol != 1:
            return
        self.report.stats["pass under protocol 1"] += 1
        store = device.workspace.service.store("project")
        typed = {stored.id for stored in store.notes() if stored.note.type is not None}
        named = {problem.id for problem in result.problems if problem.code == "old_server"}
        if typed - named:
            self.fail(f"typed notes not named under protocol 1: {sorted(typed - named)}")
        if typed:
            self.report.stats["typed notes held back under protocol 1"] += 1

    def _count(self, result: PassResult) -> None:
        for name in ("pushed", "pulled", "merged", "deleted_here", "conflicts"):
            self.report.stats[name] += len(getattr(result, name))

    def _second_pass(self, device: Device) -> str:
        """A pass right after a clean one must do nothing, in one request (two while the
        server is older than the client: its protocols are read again at every pass, so an
        upgrade is noticed at the next one)."""
        requests, refusals = device.transport.requests, len(device.transport.rejected)
        again = device.sync()
        sent = device.transport.requests - requests
        did = _did(again, device.transport.rejected[refusals:])
        expected = 1 if device.protocol == 2 else 2
        if not _idle(again) or sent != expected or not device.transport.unchanged:
            answer = "unchanged" if device.transport.unchanged else "a listing"
            self.fail(
                f"not idempotent: the pass after a clean one did {did} in {sent} "
                f"request(s), answered {answer}"
            )
        self.report.stats["idempotence checked"] += 1
        return f"{did} ({sent} request)"

    def _interleaved_pass(self, other: Device) -> None:
        saved, self.world.armed = self.world.armed, None
        refusals = len(other.transport.rejected)
        try:
            result = other.sync()
            self._count(result)
            did = _did(result, other.transport.rejected[refusals:])
            self.notes.append(f"meanwhile {other.name} syncs: {did}")
        except SyncError as exc:
            if not self._told_to_downgrade(exc):
                self.fail(f"interleaved pass of {other.name} failed: {exc.code}: {exc.message}")
        finally:
            self.world.armed = saved

    def _concurrent_edit(self, device: Device, fault: Fault) -> bool:
        """Another process of the same machine writes a note while the pass runs."""
        store = device.fresh_workspace().service.store("project")
        notes = sorted(store.notes(), key=lambda stored: stored.id)
        if not notes:
            return False
        note = notes[fault.pick % len(notes)].note
        lines = note.body.splitlines() or [""]
        index = (fault.pick >> 8) % len(lines)
        lines[index] = f"line {index} edited during a pass by {self._tag(device)}"
        edited = note.with_changes(body="\n".join(lines) + "\n", updated_at=self.world.clock())
        store.save(edited, create=False)
        before = note.content_hash_without_id
        self.oracle.record_edit(self.step, device, note.id, before, "edit during a pass")
        self.notes.append(f"meanwhile the user edits {note.id} line {index} on {device.name}")
        return True

    # ---- conflicts -----------------------------------------------------------------------

    def _resolve_step(self, step: Step) -> str:
        holders = [
            device for device in self.world.devices if ConflictBook(device.base.conflicts).ids()
        ]
        if not holders:
            return "no open conflict"
        device = holders[step.device % len(holders)]
        records = sorted(ConflictBook(device.base.conflicts).records(), key=lambda r: r.id)
        # A person repairs a half-saved file before resolving its conflict.
        records = [r for r in records if f"{r.id}.md" not in device.broken] or records[:0]
        if not records:
            return "no conflict to resolve yet"
        record = records[step.pick % len(records)]
        return self._resolve(device, record, step.choice)

    def _resolve(self, device: Device, record: ConflictRecord, choice: str) -> str:
        self.report.stats[f"resolve:{choice}"] += 1
        resolver = device.resolver()
        if choice == "text":
            tag = self._tag(device)
            body = f"hand-merged by {tag}\n"
            resolver.resolve(record.id, text=body)
            self.oracle.record_edit(self.step, device, record.id, None, "hand merge")
            return f"{device.name} merged {record.id} by hand ({record.reason})"
        resolution = resolver.resolve(record.id, keep=choice)  # type: ignore[arg-type]
        if resolution.new_id is not None:
            self.oracle.record_edit(self.step, device, resolution.new_id, None, "keep both")
            return f"{device.name} kept both of {record.id} (copy {resolution.new_id})"
        return f"{device.name} kept {choice} of {record.id} ({record.reason})"

    # ---- the end -------------------------------------------------------------------------

    def _quiesce(self, end: int) -> None:
        """Faults off, everyone online; passes round-robin (conflicts resolved as they appear,
        at random, later always by taking the cloud's version) until every device in a row had
        a pass that did nothing. Then the final invariants, and one more pass per device: after
        a clean pass it must be one request, answered ``unchanged``, doing nothing."""
        self.step = self.world.step = end
        self.world.armed = None
        devices = self.world.devices
        self.notes = []
        self.world.proxy_limit = None
        if self.downgraded:
            # The current release is back, and the people come back later: every device reads
            # the server's protocols again (at every pass while it was older); typed notes
            # resume.
            if 2 not in self.world.server.protocols:
                self.world.server.deploy((1, 2))
                self.notes.append("the operator deploys the current release of the server")
            self.world.clock.advance_hours(2)
        self._repair_due(everything=True)
        self.report.trace.extend(f"end  {note}" for note in self.notes)
        self.oracle.observe()
        for device in devices:
            device.offline_until = -1
        quiet = 0
        for turn in range(MAX_ROUNDS * len(devices)):
            device = devices[turn % len(devices)]
            refusals = len(device.transport.rejected)
            try:
                result = device.sync()
            except (OHarnessError, SimulatedCrash) as exc:
                self.fail(f"quiescence pass of {device.name} raised {exc!r}")
                return
            did = _did(result, device.transport.rejected[refusals:])
            self.report.trace.append(f"end  {device.name} sync  ->  {did}")
            if result.errors or result.rejected:
                self.fail(f"quiescence pass of {device.name}: {_did(result)}")
            records = ConflictBook(device.base.conflicts).records()
            for record in records:
                settle = turn >= SETTLE_ROUND * len(devices)
                choice = "cloud" if settle else self.rng.choice(RESOLUTIONS)
                self.report.trace.append(f"end  {self._resolve(device, record, choice)}")
            quiet = quiet + 1 if _idle(result) and not records else 0
            if self.report.failed:
                return
            if quiet == len(devices):
                break
        else:
            self.fail(f"no convergence after {MAX_ROUNDS} rounds of passes")
            return
        self.oracle.observe()
        for problem in self.oracle.check_final():
            self.fail(problem)
        for device in devices:
            outcome = self._second_pass(device)
            self.report.trace.append(f"end  {device.name} sync again  ->  {outcome}")
