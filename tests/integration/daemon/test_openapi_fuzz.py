"""Schemathesis against the live daemon on loopback, from its own OpenAPI document: cases
generated for every operation (valid and invalid bodies, parameters and headers) must never
get a server error, and every answer must carry a status the document declares for that
operation, with the declared content type, headers and body schema. Requests without the token
must be refused whatever the document says (``ignored_auth``), and the request schemas must
say what the daemon takes: a body the document allows is not refused as malformed, one it
forbids is not accepted.

Bounded for the test command: a few cases per operation, derandomized
(``OHARNESS_FUZZ_EXAMPLES`` raises it for a longer run by hand). Two operations are given
fixed cases instead of generated ones: ``POST /workspaces`` (generated paths could name real
folders, which would become projects) and ``POST /sync/on|off`` (the switch persists in the
home); ``/events`` is an endless stream, covered by the event tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from daemon_support import LiveDaemon, live_daemon
from hypothesis import HealthCheck, given, settings
from schemathesis import checks
from schemathesis.core.result import Err

from oharness.daemon import DaemonOptions

EXAMPLES = int(os.environ.get("OHARNESS_FUZZ_EXAMPLES", "12"))
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
    checks.ignored_auth,
    checks.missing_required_header,
    checks.unsupported_method,
    checks.positive_data_acceptance,
    checks.negative_data_rejection,
]
FIXED = {("POST", "/workspaces"), ("POST", "/sync/on"), ("POST", "/sync/off")}
SKIPPED = {("GET", "/events")}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    base = tmp_path_factory.mktemp("fuzzed-daemon")
    project = base / "project"
    project.mkdir()
    options = DaemonOptions(home=base / "home", start=project, background_sync=False)
    with live_daemon(options) as running:
        running.state.auth.backoff.free = 10**9  # generated wrong tokens: never backed off
        yield running


def _operations(daemon: LiveDaemon) -> dict[tuple[str, str], schemathesis.APIOperation]:
    loaded = schemathesis.openapi.from_url(
        daemon.url + "/openapi.json", headers={"Authorization": f"Bearer {daemon.token}"}
    )
    found = {}
    for result in loaded.get_all_operations():
        if isinstance(result, Err):  # an operation the document cannot describe fails the test
            raise result.err()
        operation = result.ok()
        found[(operation.method.upper(), operation.path)] = operation
    return found


def _headers(daemon: LiveDaemon) -> dict[str, str]:
    return {"Authorization": f"Bearer {daemon.token}"}


def test_generated_cases_get_only_declared_answers(daemon: LiveDaemon) -> None:
    operations = _operations(daemon)
    assert len(operations) >= 30 and set(operations) >= FIXED | SKIPPED
    for key, operation in sorted(operations.items()):
        if key not in FIXED | SKIPPED:
            _fuzz(operation, daemon)


def _fuzz(operation: schemathesis.APIOperation, daemon: LiveDaemon) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    @given(case=operation.as_strategy())
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(base_url=daemon.url, headers=_headers(daemon), checks=CHECKS)

    check()


def _call(operation: schemathesis.APIOperation, daemon: LiveDaemon, body: Any) -> int:
    case = operation.Case(body=body, media_type="application/json")
    response = case.call_and_validate(base_url=daemon.url, headers=_headers(daemon), checks=CHECKS)
    return int(response.status_code)


def test_fixed_cases_of_the_operations_not_generated(daemon: LiveDaemon, tmp_path: Path) -> None:
    operations = _operations(daemon)
    register = operations[("POST", "/workspaces")]
    other = tmp_path / "other"
    other.mkdir()
    statuses = [
        _call(register, daemon, body)
        for body in (
            {"path": str(other), "create": True},  # 201
            {"path": str(other)},  # 200: already hosted
            {"path": str(tmp_path / "missing")},  # 400
            {"path": "relative/path", "create": True},  # 400
            {"path": str(other), "create": "yes"},  # 400
            {},  # 400
        )
    ]
    assert statuses == [201, 200, 400, 400, 400, 400]
    for path in ("/sync/on", "/sync/off"):  # no background sync in this daemon: 409
        assert _call(operations[("POST", path)], daemon, None) == 409


def test_the_document_names_the_bearer_scheme_and_every_answer(daemon: LiveDaemon) -> None:
    with daemon.client() as http:
        document = http.get("/openapi.json").json()
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            declared = set(operation["responses"])
            assert {"401", "403", "413", "429"} <= declared, (method, path)
            assert "422" not in declared, (method, path)  # validation errors are 400 here
    with daemon.client(token=None) as anonymous:
        assert anonymous.get("/openapi.json").status_code == 401


def test_the_memory_routes_answer_real_notes_and_backups_as_documented(
    daemon: LiveDaemon,
) -> None:
    """Generated ids name no note: these cases check the bodies of real ones (links, a
    backup, a restore that replaces a newer version) against the document."""
    service = daemon.state.registry.default.workspace.service
    target = service.remember("Fuzz target note", "The target.", type="reference")
    linker = service.remember("Fuzz linking note", f"See [[{target.id}]] and [[nowhere]].")
    service.remember("Fuzz user note", "I like it.", type="user", tags="fuzz")
    backup = service.forget(target.id).backup_id
    operations = _operations(daemon)

    def call(method: str, path: str, status: int, **parts: Any) -> Any:
        case = operations[(method, path)].Case(**parts)
        response = case.call_and_validate(
            base_url=daemon.url, headers=_headers(daemon), checks=CHECKS
        )
        assert response.status_code == status, response.text
        return response.json()

    memory = "/workspace/memory"
    listed = call("GET", f"{memory}/notes", 200, query={"type": "user", "tag": "fuzz"})
    assert [note["summary"] for note in listed["notes"]] == ["Fuzz user note"]
    assert call("GET", f"{memory}/search", 200, query={"q": "fuzz linking"})["results"]
    shown = call("GET", f"{memory}/notes/{{note_id}}", 200, path_parameters={"note_id": linker.id})
    assert [link["missing"] for link in shown["links"]] == [True, True]  # the target is gone
    backups = call("GET", f"{memory}/backups", 200)["backups"]  # generated tasks add theirs
    assert [b["current"] for b in backups if b["backupId"] == backup] == ["absent"]
    restore = f"{memory}/backups/{{backup_id}}/restore"
    restored = call("POST", restore, 200, path_parameters={"backup_id": backup}, body={})
    assert restored["changed"] is True
    service.remember("Fuzz target note", "Changed since.", id=target.id)
    refused = call("POST", restore, 409, path_parameters={"backup_id": backup}, body={})
    assert refused["code"] == "replaces_newer"
    project_id = daemon.state.registry.default.project_id
    again = call(
        "POST",
        "/workspaces/{project_id}/memory/backups/{backup_id}/restore",
        200,
        path_parameters={"project_id": project_id, "backup_id": backup},
        body={"confirmed": True},
    )
    assert again["replacedBackupId"]
