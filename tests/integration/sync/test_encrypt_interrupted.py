"""Turning end-to-end encryption on or off cut off at every request (the process killed: not an
``Exception``, so no handler runs) and run again: the second run finishes the job, every note is
on the server exactly once (sealed, or in clear after turning it off), nothing is left readable
behind, and the last recovery key shown opens the stored envelope (issue 31)."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from syncharness import PROJECT_ID, Clock, Machine, Server, token

from oharness.errors import ValidationError
from oharness.project.paths import HomeLayout
from oharness.sync.client import SyncClient
from oharness.sync.e2e import KeyEnvelope, NoteCipher
from oharness.sync.encryption import _live_files, load_key, turn_off, turn_on, unlock
from oharness.sync.protocol import SyncScope
from oharness.sync.protocol.sealed import is_opaque_id
from oharness.sync.sealed_client import SealedClient

CHEAP = 2**10
PASSPHRASE = "correct horse battery"
ORIGIN = "http://sync.test"


class Killed(BaseException):
    """The process died here."""


class Dying(httpx2.BaseTransport):
    """Forwards to the server; the ``after``-th request kills the process once it is answered
    (the server did the work, the client never learns it)."""

    def __init__(self, server: Server, after: int) -> None:
        self.server, self.after, self.count = server, after, 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.server.http.send(request)
        self.count += 1
        if self.count == self.after:
            raise Killed(f"after request {self.count}")
        return response


def _client(server: Server, after: int = 0) -> SyncClient:
    http = httpx2.Client(transport=Dying(server, after), base_url=ORIGIN)
    return SyncClient(ORIGIN, token("alice"), http=http)


def _account(tmp_path: Path) -> tuple[Server, Machine, dict[str, str]]:
    """An account with two notes in a project and one user note, synced in clear."""
    server = Server(Clock())
    a = Machine("a", tmp_path / "repo", tmp_path / "home", server, Clock())
    a.ws.service.remember("Deploys happen on Tuesdays", "Release train at noon.")
    a.ws.service.remember("Staging runs on port 8443", "Behind the VPN.")
    a.ws.service.remember("I prefer small pull requests", "Under 300 lines.", scope="user")
    a.sync(), a.sync("user")
    plain = SyncClient(ORIGIN, token("alice"), http=server.http)
    files = {
        **_live_files(plain, SyncScope("project", PROJECT_ID)),
        **_live_files(plain, SyncScope("user")),
    }
    return server, a, files


def _everything(server: Server) -> bytes:
    return (
        b"".join(s.data for s in server.store._objects.values())
        + "".join(server.store._objects).encode()
    )


@pytest.mark.parametrize("direction", ["on", "off"])
def test_a_run_killed_at_any_request_is_finished_by_the_next(
    tmp_path: Path, direction: str
) -> None:
    server, a, files = _account(tmp_path / "count")
    home = HomeLayout(a.home)
    counting = _client(server)
    turn_on(home, counting, PASSPHRASE, show_recovery=lambda _: None, n=CHEAP)
    if direction == "off":
        counting = _client(server)
        turn_off(home, counting)
    total = counting.http._transport.count  # type: ignore[attr-defined]
    assert total > 4

    for after in range(1, total + 1):
        server, a, files = _account(tmp_path / f"{direction}-{after}")
        home = HomeLayout(a.home)
        shown: list[str] = []
        if direction == "off":
            turn_on(home, _client(server), PASSPHRASE, show_recovery=shown.append, n=CHEAP)
        with pytest.raises(Killed):
            if direction == "on":
                killed = _client(server, after)
                turn_on(home, killed, PASSPHRASE, show_recovery=shown.append, n=CHEAP)
            else:
                turn_off(home, _client(server, after))
        if direction == "on":
            turn_on(home, _client(server), PASSPHRASE, show_recovery=shown.append, n=CHEAP)
        else:
            turn_off(home, _client(server))

        plain = SyncClient(ORIGIN, token("alice"), http=server.http)
        stored = plain.keys().envelope
        everything = _everything(server)
        if direction == "on":
            held = load_key(home)
            assert held is not None and held.active, after
            assert stored is not None, after
            opened = KeyEnvelope.from_json(stored).open_with_recovery(shown[-1])
            assert opened == held.data_key, after
            cipher = NoteCipher(held.data_key)
            sealed = SealedClient(ORIGIN, token("alice"), cipher, http=server.http)
            found = {
                **_live_files(sealed, SyncScope("project", PROJECT_ID)),
                **_live_files(sealed, SyncScope("user")),
            }
            assert found == files, after
            left = [s for s in plain.scopes().scopes if not is_opaque_id(s.project_id)]
            assert left == [], after  # no scope in clear left behind
            for text in ("Tuesdays", "port 8443", "small pull requests", PROJECT_ID):
                assert text.encode() not in everything, (after, text)
        else:
            assert stored is None and load_key(home) is None, after
            found = {
                **_live_files(plain, SyncScope("project", PROJECT_ID)),
                **_live_files(plain, SyncScope("user")),
            }
            assert found == files, after
            left = [s for s in plain.scopes().scopes if is_opaque_id(s.project_id)]
            assert left == [], after  # no sealed scope left behind


def test_two_machines_turning_it_on_at_once_end_with_one_key(tmp_path: Path) -> None:
    """a is cut off after copying its notes; b turns it on meanwhile with its own passphrase;
    a's second run is refused in one line and forgets its key; a joins with b's passphrase and
    syncs sealed with b's key. The same when a's envelope loses the race to b's."""
    server, a, files = _account(tmp_path / "cut")
    b_home = HomeLayout(tmp_path / "b-home")
    a_home = HomeLayout(a.home)
    with pytest.raises(Killed):
        turn_on(a_home, _client(server, 6), PASSPHRASE, show_recovery=lambda _: None, n=CHEAP)
    assert load_key(a_home) is not None  # pending
    turn_on(b_home, _client(server), "b's own passphrase", show_recovery=lambda _: None, n=CHEAP)
    with pytest.raises(ValidationError, match="sync unlock") as refused:
        turn_on(a_home, _client(server), PASSPHRASE, show_recovery=lambda _: None, n=CHEAP)
    assert "\n" not in str(refused.value) and load_key(a_home) is None
    unlock(a_home, _client(server), passphrase="b's own passphrase", recovery_key=None)
    a_key, b_key = load_key(a_home), load_key(b_home)
    assert a_key is not None and b_key is not None and a_key.data_key == b_key.data_key

    server, a, files = _account(tmp_path / "race")
    a_home = HomeLayout(a.home)

    class RacedBy(httpx2.BaseTransport):
        """b stores its envelope just before a's put reaches the server."""

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            if request.method == "PUT" and request.url.path == "/v1/memory/keys":
                turn_on(
                    HomeLayout(tmp_path / "b2-home"),
                    _client(server),
                    "b's own passphrase",
                    show_recovery=lambda _: None,
                    n=CHEAP,
                )
            return server.http.send(request)

    raced = SyncClient(
        ORIGIN, token("alice"), http=httpx2.Client(transport=RacedBy(), base_url=ORIGIN)
    )
    with pytest.raises(ValidationError, match="sync unlock"):
        turn_on(a_home, raced, PASSPHRASE, show_recovery=lambda _: None, n=CHEAP)
    assert load_key(a_home) is None
    b_key = load_key(HomeLayout(tmp_path / "b2-home"))
    assert b_key is not None
    sealed = SealedClient(ORIGIN, token("alice"), NoteCipher(b_key.data_key), http=server.http)
    found = {
        **_live_files(sealed, SyncScope("project", PROJECT_ID)),
        **_live_files(sealed, SyncScope("user")),
    }
    assert found == files
