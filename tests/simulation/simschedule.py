"""The random schedule of a simulation run: plain data, drawn from one seed up front.

A step never depends on the outcome of an earlier one: choices that need the state (which note
to edit, which conflict to resolve) are stored as a number and taken modulo the candidates when
the step runs. So a seed always yields the same schedule, and its printed trace reads as a
script of what happened.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

#: Lines of a new note's body: edits of lines far apart merge, of the same or adjacent lines
#: conflict.
BODY_LINES = 10
EDIT_KINDS = ("create", "line", "line", "line", "line", "append", "summary", "tags")
RESOLUTIONS = ("local", "cloud", "both", "text")
CRASH_TARGETS = ("state", "note", "copy", "backup", "conflict", "any")
HTTP_FAULTS = ("429", "503", "refused", "lost", "lost")
STORE_FAULTS = ("objects-then-fail", "manifest-then-lost", "object-put-fails")


@dataclass(frozen=True)
class Fault:
    """One fault armed for one sync pass (it fires at most once).

    - ``http``: the ``nth`` request to ``target`` (snapshot or commit) is answered 429 or 503
      without reaching the server, refused, or ``lost`` (applied, the answer never arrives);
    - ``store``: the server's object store fails before the manifest write (objects already
      uploaded), after it (written, answer lost), or on the first object upload;
    - ``crash``: the device dies at the ``nth`` atomic write of ``target`` (its base state,
      a note file, a base copy, a backup, a conflict record, or any file) at ``stage``;
    - ``request-crash``: the device dies just before sending, or just after the server answered,
      its ``nth`` request to ``target``;
    - ``interleave``: device ``other`` runs a whole pass right after this pass's snapshot;
    - ``local-edit``: the user edits a note of this device right after this pass's snapshot.
    """

    kind: str
    target: str = ""
    detail: str = ""
    nth: int = 1
    other: int = -1
    pick: int = 0

    @property
    def label(self) -> str:
        """The fault's family, for coverage counts: kind, target and detail."""
        parts = [self.kind, self.target, self.detail]
        if self.kind in ("interleave", "local-edit"):
            parts = [self.kind]
        return "fault:" + ":".join(part for part in parts if part)

    def __str__(self) -> str:
        if self.kind == "http":
            return f"http {self.detail} on {self.target}#{self.nth}"
        if self.kind == "store":
            return f"store {self.target}"
        if self.kind == "crash":
            return f"crash at {self.target} write#{self.nth} {self.detail}"
        if self.kind == "request-crash":
            return f"crash {self.detail} {self.target}#{self.nth}"
        if self.kind == "interleave":
            return f"d{self.other} syncs after the snapshot"
        return f"local edit #{self.pick} after the snapshot"


@dataclass(frozen=True)
class Step:
    """One scheduled step; see :func:`generate_schedule` for the kinds."""

    kind: str
    device: int = 0
    edit: str = ""
    pick: int = 0
    line: int = 0
    duration: int = 0
    choice: str = ""
    fault: Fault | None = None
    recheck: bool = False

    def __str__(self) -> str:
        who = f"d{self.device}"
        if self.kind == "edit":
            extra = f" line {self.line}" if self.edit in ("line",) else ""
            return f"{who} edit:{self.edit}{extra} pick={self.pick}"
        if self.kind == "sync":
            fault = f" [{self.fault}]" if self.fault else ""
            again = " +idempotence" if self.recheck else ""
            return f"{who} sync{fault}{again}"
        if self.kind == "offline":
            return f"{who} offline for {self.duration} steps"
        if self.kind == "expire":
            return "server clock jumps past the tombstone window"
        if self.kind == "resolve":
            return f"{who} resolve:{self.choice} pick={self.pick}"
        if self.kind == "reset":
            return "the operator empties the server's storage"
        if self.kind == "restore":
            return f"the operator restores an older copy of the storage pick={self.pick}"
        if self.kind == "break":
            return f"{who} leaves a note unreadable for {self.duration} steps pick={self.pick}"
        if self.kind == "maxnotes":
            return f"{who} memory.maxNotes below its notes for {self.duration} steps"
        if self.kind == "limit":
            return f"a proxy's request limit becomes {PROXY_LIMITS[self.pick]}"
        if self.kind == "twin":
            return f"{who} and d{self.line} write byte-identical notes"
        if self.kind == "protocol":
            release = "an older release (protocol 1)" if self.choice == "old" else "the current one"
            return f"the operator deploys {release} of the server"
        if self.kind == "wait":
            return f"{WAIT_HOURS[self.pick]} hour(s) pass"
        return f"{who} {self.kind}{':' + self.choice if self.choice else ''} pick={self.pick}"


#: The world before storage resets, restores, unreadable windows and identical twins.
BASIC_WEIGHTS = {
    "edit": 0.32,
    "delete": 0.05,
    "recreate": 0.04,
    "sync": 0.41,
    "offline": 0.05,
    "expire": 0.03,
    "resolve": 0.10,
}
#: The extended world: the operator resets the storage or restores an older copy of it, a
#: person leaves a note unreadable for a while (then repairs it, now and then with an edit),
#: two clones of a repository hold byte-identical notes, a proxy in front of the server
#: changes its request-body limit (answering 413 above it), memory.maxNotes leaves a note out.
LIMIT_WEIGHTS = {
    **BASIC_WEIGHTS,
    "reset": 0.015,
    "restore": 0.025,
    "break": 0.04,
    "twin": 0.03,
    "limit": 0.03,
    "maxnotes": 0.02,
}
#: ... and the operator deploys an older server release (protocol 1 only) or the current one
#: again, while hours pass now and then (the client reads the server's protocols again daily,
#: at every pass while the server is older, and after a 426).
EXTENDED_WEIGHTS = {**LIMIT_WEIGHTS, "protocol": 0.03, "wait": 0.03}
#: Hours a "wait" step lets pass.
WAIT_HOURS = (1, 2, 5, 25)
#: Request-body limits a proxy in front of the server may have (one note is ~400 bytes).
PROXY_LIMITS = (None, None, 1200, 2500, 6000)


@dataclass(frozen=True)
class ScheduleShape:
    """How a schedule is drawn."""

    devices: int = 3
    steps: int = 24
    fault_rate: float = 0.6
    local_edits: bool = True
    #: Whether the account is end-to-end encrypted (every device syncs sealed; the schedule
    #: is the same as without).
    encrypted: bool = False
    weights: dict[str, float] = field(default_factory=lambda: dict(EXTENDED_WEIGHTS))


def draw_fault(rng: random.Random, shape: ScheduleShape, device: int) -> Fault | None:
    """A random fault for a pass of ``device`` (or none)."""
    if rng.random() >= shape.fault_rate:
        return None
    kinds = ["http", "http", "store", "crash", "crash", "crash", "request-crash", "interleave"]
    if shape.local_edits:
        kinds.append("local-edit")
    kind = rng.choice(kinds)
    if kind == "http":
        target = rng.choice(("snapshot", "commit", "commit"))
        return Fault(kind, target, rng.choice(HTTP_FAULTS), nth=1)
    if kind == "store":
        return Fault(kind, rng.choice(STORE_FAULTS))
    if kind == "crash":
        stage = rng.choice(("before-replace", "after-replace"))
        return Fault(kind, rng.choice(CRASH_TARGETS), stage, nth=rng.choice((1, 1, 1, 2, 2, 3)))
    if kind == "request-crash":
        stage = rng.choice(("before", "after"))
        return Fault(kind, rng.choice(("snapshot", "commit", "commit")), stage, nth=1)
    if kind == "interleave":
        other = rng.choice([index for index in range(shape.devices) if index != device])
        return Fault(kind, "snapshot", other=other)
    return Fault(kind, "snapshot", pick=rng.randrange(1 << 30))


def generate_schedule(seed: int, shape: ScheduleShape) -> list[Step]:
    """The steps of one seed."""
    rng = random.Random(seed)
    kinds = list(shape.weights)
    weights = [shape.weights[kind] for kind in kinds]
    steps: list[Step] = []
    for _ in range(shape.steps):
        kind = rng.choices(kinds, weights)[0]
        device = rng.randrange(shape.devices)
        pick = rng.randrange(1 << 30)
        if kind == "edit":
            steps.append(
                Step(
                    "edit",
                    device,
                    edit=rng.choice(EDIT_KINDS),
                    pick=pick,
                    line=rng.randrange(BODY_LINES),
                )
            )
        elif kind == "recreate":
            steps.append(Step("recreate", device, pick=pick, choice=rng.choice(("new", "restore"))))
        elif kind == "sync":
            fault = draw_fault(rng, shape, device)
            steps.append(Step("sync", device, fault=fault, recheck=rng.random() < 0.3))
        elif kind == "offline":
            steps.append(Step("offline", device, duration=rng.randint(2, 10)))
        elif kind == "break":
            steps.append(
                Step("break", device, pick=pick, duration=rng.randint(1, 8), edit=rng.choice("ab"))
            )
        elif kind == "maxnotes":
            steps.append(Step("maxnotes", device, duration=rng.randint(1, 6)))
        elif kind == "limit":
            steps.append(Step("limit", device, pick=rng.randrange(len(PROXY_LIMITS))))
        elif kind == "twin":
            other = rng.choice([index for index in range(shape.devices) if index != device])
            steps.append(Step("twin", device, pick=pick, line=other))
        elif kind == "protocol":
            steps.append(Step("protocol", device, choice=rng.choice(("old", "old", "current"))))
        elif kind == "wait":
            steps.append(Step("wait", device, pick=rng.randrange(len(WAIT_HOURS))))
        elif kind == "resolve":
            steps.append(Step("resolve", device, pick=pick, choice=rng.choice(RESOLUTIONS)))
        else:
            steps.append(Step(kind, device, pick=pick))
    return steps


def fault_labels(shape: ScheduleShape) -> list[str]:
    """Every fault family :func:`draw_fault` can draw for ``shape``."""
    faults = [
        Fault("http", target, detail) for target in ("snapshot", "commit") for detail in HTTP_FAULTS
    ]
    faults += [Fault("store", target) for target in STORE_FAULTS]
    faults += [
        Fault("crash", target, stage)
        for target in CRASH_TARGETS
        for stage in ("before-replace", "after-replace")
    ]
    faults += [
        Fault("request-crash", target, stage)
        for target in ("snapshot", "commit")
        for stage in ("before", "after")
    ]
    faults.append(Fault("interleave"))
    if shape.local_edits:
        faults.append(Fault("local-edit"))
    return sorted({fault.label for fault in faults})
