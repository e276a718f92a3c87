"""A scope's last error as the status and doctor show it: a note the server refused is named
once, per note, with its own fix."""

from __future__ import annotations

from oharness.sync.actions import scope_error, unsynced_files

REFUSED = {"code": "too_large", "message": "project notes: the body is 303002 bytes: split it"}


def test_a_note_the_server_refused_is_not_also_the_scopes_error() -> None:
    scope = {
        "lastError": REFUSED,
        "noteErrors": [{"id": "huge-1", "file": None, "code": "too_large", "message": "split"}],
    }
    assert scope_error(scope) is None
    assert unsynced_files(scope) == {"huge-1": "split"}


def test_an_error_of_the_whole_pass_stays() -> None:
    offline = {"code": "network", "message": "project notes: the server did not answer"}
    assert scope_error({"lastError": offline, "noteErrors": []}) == offline
    assert scope_error({"lastError": None}) is None
    other = {"lastError": offline, "noteErrors": [{"id": "x", "code": "too_large"}]}
    assert scope_error(other) == offline
