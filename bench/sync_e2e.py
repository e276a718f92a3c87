"""What end-to-end encryption costs (issue 31): key derivation, sealing and opening one note,
and the first sync of a project, each beside the same sync unencrypted in the same run.

Two machines share one project through the sync server (the real app over an in-memory object
store, in this process) and run the real sync engine: the first uploads every note, the second
(with the same notes already on disk, as a second clone has them) takes its first sync, then
the second pulls one note the first changed. The unencrypted account and the encrypted one
(every pass through ``SealedClient``) do the same on the same notes; each case is timed on its
own, and the bytes the encrypted account stores are compared with the unencrypted one's.

    python bench/sync_e2e.py            # 5,000 notes
    python bench/sync_e2e.py --quick    # 300 notes, for CI
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import jwt
from starlette.testclient import TestClient

from oharness.memory.workspace import open_workspace
from oharness.notes.format import Note, serialise_note_bytes
from oharness.server.app import create_app
from oharness.server.config import JwtSettings, ServerSettings
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.ancestor import AncestorStore
from oharness.sync.client import SyncClient
from oharness.sync.e2e import SCRYPT_N, NoteCipher, ScryptParams, new_account_key
from oharness.sync.protocol import SyncScope
from oharness.sync.scope_sync import ScopeSync
from oharness.sync.sealed_client import SealedClient

SECRET = "bench-secret-0123456789abcdef0123456789abcdef"
ORIGIN = "http://sync.bench"
PROJECT_ID = "p-0123456789abcdef0123456789abcdef"


def note(number: int) -> Note:
    body = (
        f"Service {number} is owned by team {number % 17}; deploys go out on Tuesdays after "
        f"the integration suite passes. Rollbacks use the runbook in docs/runbooks/{number}.md "
        "and page the on-call engineer when error rates stay above two percent.\n"
    )
    return Note(
        f"service-{number:05d}-owner",
        f"Who owns service {number}",
        body,
        ("ops",),
        None,
        1_789_000_000_000,
        1_789_000_000_000,
    )


class World:
    """One server and two machines' folders for one account (sealed or not)."""

    def __init__(self, root: Path, count: int, cipher: NoteCipher | None) -> None:
        self.store = MemoryObjectStore()
        settings = ServerSettings(jwt=JwtSettings(secret=SECRET), rate_per_minute=0)
        self.http = TestClient(
            create_app(self.store, settings, sleep=lambda _: None), base_url=ORIGIN
        )
        payload = {"sub": "bench", "exp": int(time.time()) + 3600, "ent": {"plan": "paid"}}
        self.token = jwt.encode(payload, SECRET, algorithm="HS256")
        self.cipher = cipher
        if cipher is not None:  # an envelope marks the account encrypted (its keys are not read)
            account = SyncClient(ORIGIN, self.token, http=self.http)
            account.put_keys(new_account_key("bench passphrase", n=2**10).envelope.to_json(), 0)
        self.machines = [root / "a", root / "b"]
        for machine in self.machines:
            folder = machine / "repo" / "MEMORY"
            folder.mkdir(parents=True)
            (machine / "repo" / ".oharness").mkdir()
            (machine / "repo" / ".oharness" / "project.json").write_text(
                f'{{"id": "{PROJECT_ID}", "createdAt": 1}}'
            )
            config = f'{{"memory": {{"maxNotes": {count + 100}}}}}'
            (machine / "repo" / ".oharness" / "config.json").write_text(config)
            for number in range(count):
                item = note(number)
                (folder / f"{item.id}.md").write_bytes(serialise_note_bytes(item))

    def sync(self, index: int) -> float:
        machine = self.machines[index]
        workspace = open_workspace(machine / "repo", machine / "home", register=True)
        service = workspace.service
        key = service.scope_key("project")
        client: SyncClient
        if self.cipher is None:
            client = SyncClient(ORIGIN, self.token, http=self.http)
        else:
            maps = machine / "home" / "memory-sync" / "sealed"
            client = SealedClient(ORIGIN, self.token, self.cipher, maps_dir=maps, http=self.http)
        engine = ScopeSync(
            store=service.store("project"),
            base=AncestorStore(machine / "home" / "memory-sync", key),
            client=client,
            scope=SyncScope("project", PROJECT_ID),
            scope_key=key,
            backups=service.backups(),
            clock=lambda: int(time.time() * 1000),
        )
        started = time.perf_counter()
        result = engine.run()
        elapsed = time.perf_counter() - started
        if result.failed:
            raise SystemExit(f"a sync failed: {result.errors}")
        workspace.close()
        return elapsed

    def change_one(self) -> None:
        workspace = open_workspace(
            self.machines[0] / "repo", self.machines[0] / "home", register=True
        )
        workspace.service.remember("Who owns service 1", "Team 99 now.", id="service-00001-owner")
        workspace.close()

    def stored_bytes(self) -> int:
        return sum(len(stored.data) for stored in self.store._objects.values())


def measure(count: int, cipher: NoteCipher | None) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="oharness-e2e-bench-"))
    try:
        world = World(root, count, cipher)
        first = world.sync(0)
        second = world.sync(1)
        world.change_one()
        world.sync(0)
        one = world.sync(1)
        return {"upload": first, "second": second, "one": one, "bytes": world.stored_bytes()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def per_note(cipher: NoteCipher, rounds: int) -> tuple[float, float]:
    text = serialise_note_bytes(note(7)).decode("utf-8")
    sealed = cipher.seal("project:x", "service-00007-owner", text)
    opaque = cipher.opaque_id("project:x", "service-00007-owner")
    seal_times, open_times = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        cipher.seal("project:x", "service-00007-owner", text)
        seal_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        cipher.open("project:x", opaque, sealed)
        open_times.append(time.perf_counter() - started)
    return statistics.median(seal_times), statistics.median(open_times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="300 notes (CI smoke run)")
    parser.add_argument("--notes", type=int, default=None)
    args = parser.parse_args(argv)
    count = args.notes or (300 if args.quick else 5_000)
    started = time.perf_counter()
    ScryptParams(b"0" * 16, SCRYPT_N).derive("correct horse battery staple")
    derive = time.perf_counter() - started
    cipher = NoteCipher(new_account_key("p", n=2**10).data_key)
    seal_s, open_s = per_note(cipher, 200 if args.quick else 2_000)
    plain = measure(count, None)
    sealed = measure(count, cipher)
    print(f"key derivation (scrypt n=2**17, r=8, p=1): {derive * 1000:.0f} ms")
    print(
        f"one note of {len(serialise_note_bytes(note(7)))} bytes: seal {seal_s * 1e6:.0f} µs,"
        f" open {open_s * 1e6:.0f} µs (median)"
    )
    print(f"\n{count:,} notes, one project, two machines (seconds)")
    print(f"{'case':<44}{'unencrypted':>12}{'encrypted':>12}{'ratio':>8}")
    for key, label in (
        ("upload", "first upload of every note"),
        ("second", "first sync of a second machine (same notes)"),
        ("one", "a pass pulling one changed note"),
    ):
        print(f"{label:<44}{plain[key]:>12.2f}{sealed[key]:>12.2f}{sealed[key] / plain[key]:>8.2f}")
    print(
        f"{'bytes stored on the server':<44}{plain['bytes']:>12,.0f}{sealed['bytes']:>12,.0f}"
        f"{sealed['bytes'] / plain['bytes']:>8.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
