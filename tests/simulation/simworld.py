"""The simulated world: one sync server and N devices in one process, with fault injection.

The server is the real ASGI app over an in-memory object store, reached through an
in-process transport; every device is a real OHARNESS_HOME and project folder on disk with
the real workspace, sync engine and conflict resolver. Faults come from three places:

- the device's transport (429/503 answers, refused connections, lost answers, the device
  dying just before a request or just after its answer, another device syncing in between);
- the server's object store hooks (failing before or after the manifest write);
- the atomic-write hook of :mod:`oharness.fsio` (the device dying before or after a file
  replace: its base state, a note, a base copy, a backup, a conflict record).

A crashed device loses every in-memory object and starts again from its disk.

An encrypted world (issue 31) is the same world with the account end-to-end encrypted: its
key envelope on the server, the data key on every device, every pass through the sealed client
the sync service makes (:func:`~oharness.sync.encryption.sealed_client_for`). The server holds
sealed notes under opaque ids; what the oracle reads of it is opened with the account's key.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import jwt
from simschedule import Fault
from starlette.testclient import TestClient

from oharness.errors import StorageUnavailable, SyncError
from oharness.fsio import set_fault_hook
from oharness.memory.workspace import Workspace, open_workspace
from oharness.notes.format import Note, file_revision, parse_note_bytes
from oharness.project.paths import HomeLayout, folder_state_key, stable_scope_key
from oharness.server.app import create_app
from oharness.server.config import JwtSettings, ServerSettings
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.ancestor import AncestorStore
from oharness.sync.client import SyncClient
from oharness.sync.e2e import NoteCipher, new_account_key
from oharness.sync.encryption import DeviceKey, save_key, sealed_client_for
from oharness.sync.protocol import (
    Manifest,
    Quotas,
    SyncScope,
    manifest_key,
    object_key,
    parse_manifest,
    scope_prefix,
)
from oharness.sync.protocol.sealed import sealed_bytes
from oharness.sync.resolve import ConflictResolver
from oharness.sync.scope_sync import PassResult, ScopeSync
from oharness.sync.sealed_client import scope_key_of
from oharness.sync.sync_service import SyncService, SyncTarget, sync_targets

SECRET = "simulation-secret-0123456789abcdef0123456789"
PROJECT_ID = "p-5e1f0c0ffee0123456789abcdef0123"
ORIGIN = "http://sync.sim"
USER = "sim-user"
SCOPE_KEY = stable_scope_key("project", PROJECT_ID)
PREFIX = scope_prefix(USER, SyncScope("project", PROJECT_ID))
#: The encrypted world's passphrase (its key derivation made cheap: n is a test's).
PASSPHRASE = "simulation passphrase"
DAY_MS = 86_400_000


class SimulatedCrash(BaseException):
    """The device died: nothing after this point of the pass ran (not an ``Exception``, so no
    handler in the code under test can swallow it)."""


class TickClock:
    """Milliseconds that move by one per reading (and by days when told)."""

    def __init__(self, start: int = 1_789_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1
        return self.now

    def advance_days(self, days: int) -> None:
        self.now += days * DAY_MS

    def advance_hours(self, hours: int) -> None:
        self.now += hours * DAY_MS // 24


def seeded_hex(seed: int) -> Callable[[int], str]:
    """A deterministic hex source for note ids."""
    rng = random.Random(seed)

    def source(count: int) -> str:
        return "".join(rng.choice("0123456789abcdef") for _ in range(count))

    return source


class ArmedFault:
    """The fault of the running step, bound to the device it targets."""

    def __init__(self, fault: Fault, device: int) -> None:
        self.fault = fault
        self.device = device
        self.fired = False
        self.seen: dict[str, int] = {}

    def count(self, what: str) -> int:
        self.seen[what] = self.seen.get(what, 0) + 1
        return self.seen[what]


class SimServer:
    """The sync server app over a memory store, with a history of every committed manifest."""

    def __init__(
        self, world: World, seed: int, tombstone_days: int, cipher: NoteCipher | None
    ) -> None:
        self.world = world
        #: The account's key in an encrypted world (the oracle opens what the server holds).
        self.cipher = cipher
        self.prefix = PREFIX
        self.sealed_scope = ""
        if cipher is not None:
            self.sealed_scope = cipher.opaque_scope(scope_key_of(SyncScope("project", PROJECT_ID)))
            self.prefix = scope_prefix(USER, SyncScope("project", self.sealed_scope))
        self.clock = TickClock()
        self.tombstone_days = tombstone_days
        self.store = MemoryObjectStore(before=self._before, after=self._after)
        self.seed = seed
        #: The protocols the running release serves (an older release serves only 1).
        self.protocols: tuple[int, ...] = (1, 2)
        self.releases = 0
        self.http = self._start()
        #: (id, rev) -> content hash, for every live note of every manifest ever committed.
        self.revisions: dict[tuple[str, str], str] = {}
        self.version = 0
        self._recording = False
        #: Copies of the storage taken along the way (what a restore may put back).
        self.copies: list[dict[str, Any]] = []

    def _start(self) -> TestClient:
        settings = ServerSettings(
            jwt=JwtSettings(secret=SECRET),
            quotas=Quotas(tombstone_days=self.tombstone_days),
            rate_per_minute=0,
            protocols=self.protocols,
        )
        rng = random.Random(self.seed * 131 + self.releases)
        app = create_app(self.store, settings, clock=self.clock, sleep=lambda _: None, rng=rng)
        http = TestClient(app, base_url=ORIGIN)
        http.__enter__()
        return http

    def deploy(self, protocols: tuple[int, ...]) -> None:
        """The operator deploys another release over the same storage: an older one (protocol
        1 only) or the current one again (protocols 1 and 2)."""
        self.close()
        self.protocols = protocols
        self.releases += 1
        self.http = self._start()

    def close(self) -> None:
        self.http.__exit__(None, None, None)

    # ---- the operator's hand: resets and restores of the storage -------------------------

    def save_copy(self) -> None:
        """Keep a copy of the scope's storage as it is now (a backup an operator may restore)."""
        with self.store._lock:
            self.copies.append(dict(self.store._objects))

    def reset(self) -> None:
        """The operator empties the storage (a new bucket, a wiped volume)."""
        with self.store._lock:
            self.store._objects.clear()

    def restore(self, pick: int) -> int:
        """The operator puts back an older copy of the storage; returns its manifest version."""
        if not self.copies:
            self.reset()
            return 0
        copy = self.copies[pick % len(self.copies)]
        with self.store._lock:
            self.store._objects = dict(copy)
        stored = copy.get(manifest_key(self.prefix))
        return parse_manifest(stored.data).version if stored is not None else 0

    def forward(self, request: httpx2.Request) -> httpx2.Response:
        return self.http.send(request)

    def manifest_notes(self) -> dict[str, str]:
        """The live notes of the current manifest: id -> content hash."""
        self._recording = True
        try:
            stored = self.store.get(manifest_key(self.prefix))
            if stored is None:
                return {}
            return {note_id: full for (note_id, _), full in self._live(stored.data).items()}
        finally:
            self._recording = False

    def _live(self, data: bytes) -> dict[tuple[str, str], str]:
        """A manifest's live notes as the devices know them: (id, rev) -> content hash (a
        sealed note opened with the account's key, the scope's marker left out)."""
        manifest: Manifest = parse_manifest(data)
        if self.cipher is None:
            return {(note_id, note.rev): note.hash for note_id, note in manifest.notes.items()}
        name = scope_key_of(SyncScope("project", PROJECT_ID))
        marker = self.cipher.scope_marker_id(self.sealed_scope)
        live = {}
        for opaque, note in manifest.notes.items():
            if opaque == marker:
                continue
            stored = self.store.get(object_key(self.prefix, opaque, note.rev))
            assert stored is not None, f"manifest names {opaque}@{note.rev}, no object holds it"
            raw = sealed_bytes(stored.data.decode("ascii"))
            assert raw is not None, f"{opaque}@{note.rev} is stored in clear"
            note_id, text = self.cipher.open(name, opaque, raw)
            data = text.encode("utf-8")
            live[(note_id, file_revision(data))] = parse_note_bytes(data).content_hash
        return live

    def _store_fault(self, op: str, key: str, when: str) -> None:
        armed = self.world.armed
        if armed is None or armed.fired or armed.fault.kind != "store" or self._recording:
            return
        target = armed.fault.target
        manifest = key.endswith("/manifest.json")
        hit = (
            (target == "objects-then-fail" and when == "before" and op == "put" and manifest)
            or (target == "manifest-then-lost" and when == "after" and op == "put" and manifest)
            or (target == "object-put-fails" and when == "before" and op == "put" and not manifest)
        )
        if hit:
            armed.fired = True
            raise StorageUnavailable(f"injected storage fault ({target}, {op} {key})")

    def _before(self, op: str, key: str) -> None:
        self._store_fault(op, key, "before")

    def _after(self, op: str, key: str) -> None:
        if op == "put" and key.endswith("/manifest.json") and not self._recording:
            self._record(key)
        self._store_fault(op, key, "after")

    def _record(self, key: str) -> None:
        self._recording = True
        try:
            stored = self.store.get(key)
            assert stored is not None
            self.version = max(self.version, parse_manifest(stored.data).version)
            self.revisions.update(self._live(stored.data))
        finally:
            self._recording = False


class DeviceTransport(httpx2.BaseTransport):
    """One device's network: forwards to the server, with the transport faults."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.requests = 0
        #: Every change the server refused (CAS races included), in order.
        self.rejected: list[str] = []
        self.unchanged = False
        self.proxy_refusals = 0
        self.identity_reads = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        endpoint = request.url.path.rsplit("/", 1)[-1]
        if endpoint == "identity":
            self.identity_reads += 1
        limit = self.device.world.proxy_limit
        if endpoint == "commit" and limit is not None and len(request.read()) > limit:
            # A proxy in front of the server with a body limit of its own (an HTML 413 page).
            self.proxy_refusals += 1
            return httpx2.Response(413, text="<html>413 Request Entity Too Large</html>")
        armed = self._fault_for(endpoint)
        if armed is not None:
            early = self._before_server(armed, request)
            if early is not None:
                return early
        response = self.device.world.server.forward(request)
        if endpoint == "commit" and response.status_code == 200:
            for item in response.json().get("rejected", []):
                self.rejected.append(f"{item['id']} ({item['reason']})")
        if endpoint == "snapshot" and response.status_code == 200:
            self.unchanged = bool(response.json().get("unchanged"))
        if armed is not None:
            self._after_server(armed, request)
        return response

    def _fault_for(self, endpoint: str) -> ArmedFault | None:
        """The armed fault when it targets this request of this device."""
        armed = self.device.world.armed
        if armed is None or armed.fired or armed.device != self.device.index:
            return None
        if armed.fault.target != endpoint or armed.count(endpoint) != armed.fault.nth:
            return None
        return armed

    def _before_server(self, armed: ArmedFault, request: httpx2.Request) -> httpx2.Response | None:
        fault = armed.fault
        if fault.kind == "http" and fault.detail in ("429", "503"):
            armed.fired = True
            code = "rate_limited" if fault.detail == "429" else "unavailable"
            body = {
                "error": code,
                "message": f"injected {fault.detail}; retry later",
                "quotas": Quotas().to_json(),
                "plan": "paid",
            }
            return httpx2.Response(
                int(fault.detail), json=body, headers={"Retry-After": "30"}, request=request
            )
        if fault.kind == "http" and fault.detail == "refused":
            armed.fired = True
            raise httpx2.ConnectError("injected: connection refused", request=request)
        if fault.kind == "request-crash" and fault.detail == "before":
            armed.fired = True
            raise SimulatedCrash(f"before sending {fault.target}")
        return None

    def _after_server(self, armed: ArmedFault, request: httpx2.Request) -> None:
        fault, world = armed.fault, self.device.world
        if fault.kind == "http" and fault.detail == "lost":
            armed.fired = True
            raise httpx2.ReadTimeout("injected: the answer was lost", request=request)
        if fault.kind == "request-crash" and fault.detail == "after":
            armed.fired = True
            raise SimulatedCrash(f"after the answer to {fault.target}")
        if fault.kind == "interleave" and world.devices[fault.other].online:
            armed.fired = True
            world.interleaved(world.devices[fault.other])
        if fault.kind == "local-edit":
            armed.fired = world.concurrent_edit(self.device, fault)


class Device:
    """One machine: its project folder, OHARNESS_HOME and (until it crashes) open objects."""

    def __init__(self, world: World, index: int, seed: int) -> None:
        self.world = world
        self.index = index
        self.name = f"d{index}"
        self.root = world.directory / self.name / "repo"
        self.home = world.directory / self.name / "home"
        (self.root / ".oharness").mkdir(parents=True)
        (self.root / ".oharness" / "project.json").write_text(
            json.dumps({"id": PROJECT_ID, "createdAt": 1}), encoding="utf-8"
        )
        self.home.mkdir(parents=True)
        self.hex = seeded_hex(seed * 31 + index)
        self.transport = DeviceTransport(self)
        self.http = httpx2.Client(transport=self.transport, base_url=ORIGIN)
        payload = {"sub": USER, "exp": int(time.time()) + 7 * 86400, "ent": {"plan": "paid"}}
        self.token = jwt.encode(payload, SECRET, algorithm="HS256")
        if world.account_key is not None:
            save_key(HomeLayout(self.home), world.account_key)
        self.client = self._client()
        self.offline_until = -1
        self.crashes = 0
        #: Passes before this step see memory.maxNotes one below the note files held.
        self.limited_until = -1
        #: Note files the person left unreadable mid-edit: name -> (their bytes, repair step).
        self.broken: dict[str, tuple[bytes, int]] = {}
        self._workspace: Workspace | None = None
        self._engine: ScopeSync | None = None
        self.notes_dir = self.workspace.service.store("project").directory
        self.backups_dir = HomeLayout(self.home).backups_dir
        #: The sync state of this device's notes folder (as ``SyncService.base`` names it).
        self.state_key = folder_state_key(SCOPE_KEY, self.notes_dir)
        self.base = AncestorStore(self.home / "memory-sync", SCOPE_KEY, self.state_key)
        self.service = SyncService(
            HomeLayout(self.home),
            backups=self.workspace.service.backups(),
            clock=world.clock,
            http=self.http,
        )
        self.service.settings.login(ORIGIN, self.token)
        #: The protocol of this device's last pass (its engine speaks it).
        self.protocol: int | None = None
        #: Identity reads (protocol checks) this device made.
        self.identity_reads = 0

    def _client(self) -> SyncClient:
        """The client a pass of the sync service uses (sealed while this device holds the
        account's key, reading its seal maps from disk)."""
        return sealed_client_for(HomeLayout(self.home), ORIGIN, self.token, http=self.http)

    @property
    def online(self) -> bool:
        return self.offline_until <= self.world.step

    @property
    def workspace(self) -> Workspace:
        if self._workspace is None:
            self._workspace = open_workspace(
                self.root, self.home, register=True, clock=self.world.clock, hex_source=self.hex
            )
        return self._workspace

    def fresh_workspace(self) -> Workspace:
        """A second process on this machine (its own caches)."""
        return open_workspace(
            self.root, self.home, register=True, clock=self.world.clock, hex_source=self.hex
        )

    @property
    def engine(self) -> ScopeSync:
        if self._engine is None:
            service = self.workspace.service
            self._engine = ScopeSync(
                store=service.store("project"),
                base=AncestorStore(self.home / "memory-sync", SCOPE_KEY, self.state_key),
                client=self.client,
                scope=SyncScope("project", PROJECT_ID),
                scope_key=SCOPE_KEY,
                backups=service.backups(),
                clock=self.world.clock,
                protocol=self.protocol or 2,
            )
        return self._engine

    def resolver(self) -> ConflictResolver:
        service = self.workspace.service
        return ConflictResolver(
            store=service.store("project"),
            base=AncestorStore(self.home / "memory-sync", SCOPE_KEY, self.state_key),
            backups=service.backups(),
            scope_key=SCOPE_KEY,
            clock=self.world.clock,
            hex_source=self.hex,
            lock_timeout=0.5,
        )

    def target(self) -> SyncTarget:
        [target] = [t for t in sync_targets(self.workspace) if t.scope == "project"]
        return target

    def sync(self) -> PassResult:
        """One pass of the project scope, speaking the protocol the sync service checks (its
        identity read again on a new token, daily, at every pass while the server is older, after a
        426), as ``oharness sync now`` does."""
        target = self.target()
        before = self.transport.identity_reads
        protocol, paused = self.service.check_protocol(target, self.client)
        self.identity_reads += self.transport.identity_reads - before
        assert paused is None, paused  # project notes sync under protocol 1 too
        if protocol != self.protocol:
            self._engine = None
            self.protocol = protocol
        try:
            return self.engine.run()
        except SyncError as exc:
            if exc.code == "protocol_unsupported":
                self.service.forget_identity(target)
            raise

    def crash(self) -> None:
        """Forget everything in memory; the next use starts again from disk."""
        self._workspace = None
        self._engine = None
        self.client = self._client()
        self.crashes += 1

    def break_note(self, pick: int, until: int) -> str | None:
        """Leave one note file unreadable (an editor's half-saved frontmatter) until ``until``."""
        names = sorted(
            path.name
            for path in self.notes_dir.glob("*.md")
            if path.name not in self.broken and path.is_file()
        )
        if not names:
            return None
        name = names[pick % len(names)]
        path = self.notes_dir / name
        data = path.read_bytes()
        self.broken[name] = (data, until)
        path.write_bytes(data[: data.index(b"\n", 4) // 2] if b"\n" in data[4:] else b"---\n")
        self.workspace.service.store("project").refresh(full=True)
        return name

    def repair(self, name: str, suffix: bytes = b"") -> None:
        """The person finishes the edit: the file is whole again (``suffix`` appended)."""
        data, _ = self.broken.pop(name)
        (self.notes_dir / name).write_bytes(data + suffix)
        self.workspace.service.store("project").refresh(full=True)

    def owns(self, path: Path) -> bool:
        return path.is_relative_to(self.root) or path.is_relative_to(self.home)

    def create_note(self, summary: str, body: str, *, now: int | None = None) -> str:
        """A project note ``<summary>-1`` written straight to the store (no sync); its id."""
        stamp = self.world.clock() if now is None else now
        note = Note(f"{summary.lower()}-1", summary, body, ("sim",), None, stamp, stamp)
        self.workspace.service.store("project").save(note, create=True)
        return note.id

    def edit_line(self, note_id: str, line: int, text: str) -> None:
        """Replace one line of a project note's body, as a person editing it would."""
        store = self.workspace.service.store("project")
        stored = store.get(note_id)
        assert stored is not None
        lines = stored.note.body.splitlines()
        lines[line] = text
        body = "\n".join(lines) + "\n"
        store.save(stored.note.with_changes(body=body, updated_at=self.world.clock()), create=False)


class World:
    """The server, the devices, the shared device clock and the armed fault."""

    def __init__(
        self,
        directory: Path,
        seed: int,
        devices: int,
        tombstone_days: int = 1,
        *,
        encrypted: bool = False,
    ) -> None:
        self.directory = directory
        self.seed = seed
        self.clock = TickClock()
        self.step = 0
        self.armed: ArmedFault | None = None
        #: A proxy's request-body limit in front of the server (``None``: no proxy limit).
        self.proxy_limit: int | None = None
        #: The key every device of an encrypted world holds (``None``: not encrypted).
        self.account_key: DeviceKey | None = None
        cipher = None
        if encrypted:
            made = new_account_key(PASSPHRASE, n=2**4)
            envelope = made.envelope.to_json()
            self.account_key = DeviceKey(ORIGIN, USER, made.data_key, True, envelope)
            cipher = NoteCipher(made.data_key)
        self.server = SimServer(self, seed, tombstone_days, cipher)
        self.devices = [Device(self, index, seed) for index in range(devices)]
        if encrypted:
            self.devices[0].client.put_keys(envelope, 0)
        self.on_interleave: Callable[[Device], Any] | None = None
        self.on_concurrent_edit: Callable[[Device, Fault], bool] | None = None
        self._previous_hook = set_fault_hook(self._write_hook)

    def close(self) -> None:
        set_fault_hook(self._previous_hook)
        for device in self.devices:
            device.http.close()
        self.server.close()

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def arm(self, fault: Fault | None, device: Device) -> None:
        self.armed = ArmedFault(fault, device.index) if fault is not None else None

    def disarm(self) -> bool:
        """Stop faults; True when the armed one fired."""
        fired = self.armed is not None and self.armed.fired
        self.armed = None
        return fired

    def interleaved(self, other: Device) -> None:
        assert self.on_interleave is not None
        self.on_interleave(other)

    def concurrent_edit(self, device: Device, fault: Fault) -> bool:
        assert self.on_concurrent_edit is not None
        return self.on_concurrent_edit(device, fault)

    def _write_hook(self, stage: str, target: Path) -> None:
        armed = self.armed
        if armed is None or armed.fired or armed.fault.kind != "crash":
            return
        fault = armed.fault
        device = self.devices[armed.device]
        if stage != fault.detail or not device.owns(target):
            return
        if fault.target != "any" and _write_kind(device, target) != fault.target:
            return
        if armed.count(fault.target) == fault.nth:
            armed.fired = True
            raise SimulatedCrash(f"{stage} of {target.name}")


def _write_kind(device: Device, target: Path) -> str:
    if target.name == "state.json":
        return "state"
    if target.parent.name == "copies":
        return "copy"
    if target.parent.name == "conflicts":
        return "conflict"
    if target.parent == device.backups_dir:
        return "backup"
    if target.parent == device.notes_dir:
        return "note"
    return "other"
