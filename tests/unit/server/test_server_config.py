"""Server settings from the environment (spec 08) and their documentation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sync_server_support import SECRET

from oharness.errors import ConfigError
from oharness.server.config import ENVIRONMENT_DEFAULTS, settings_from_environ
from oharness.sync.protocol import PlanLimits, Quotas

DOCS = Path(__file__).resolve().parents[3] / "docs"


def no_files(path: str) -> str:
    raise AssertionError(f"unexpected file read: {path}")


def test_defaults() -> None:
    settings = settings_from_environ({"OHARNESS_SYNC_JWT_SECRET": SECRET}, no_files)
    assert settings.quotas == Quotas(
        max_notes=5000,
        max_changes_per_commit=500,
        max_body_bytes=131072,
        max_response_bytes=16777216,
        tombstone_days=90,
        max_request_bytes=32 * 1024 * 1024,  # announced with the quotas
    )
    assert settings.max_request_bytes == 32 * 1024 * 1024
    assert settings.rate_per_minute == 60
    assert settings.protocols == (1, 2)
    assert settings.admin_key is None and settings.free_plan_limits is None


def test_every_variable_is_read() -> None:
    files = {
        "/etc/ent.json": '{"free": {"maxNotes": 200, "maxBodyBytes": 16384}}',
        "/etc/key.pem": "-----BEGIN PUBLIC KEY-----\n...",
    }
    environ = {
        "OHARNESS_SYNC_JWT_PUBLIC_KEY": "/etc/key.pem",
        "OHARNESS_SYNC_JWT_ISSUER": "https://id.example",
        "OHARNESS_SYNC_JWT_AUDIENCE": "sync",
        "OHARNESS_SYNC_ADMIN_KEY": "k",
        "OHARNESS_SYNC_MAX_NOTES": "10",
        "OHARNESS_SYNC_MAX_CHANGES_PER_COMMIT": "11",
        "OHARNESS_SYNC_MAX_BODY_BYTES": "12",
        "OHARNESS_SYNC_MAX_RESPONSE_BYTES": "13",
        "OHARNESS_SYNC_MAX_REQUEST_BYTES": "2048",
        "OHARNESS_SYNC_TOMBSTONE_DAYS": "14",
        "OHARNESS_SYNC_RATE_PER_MINUTE": "0",
        "OHARNESS_SYNC_ENTITLEMENTS": "/etc/ent.json",
        "OHARNESS_SYNC_PROTOCOLS": "1",
    }
    settings = settings_from_environ(environ, files.__getitem__)
    assert settings.jwt.public_key_pem == files["/etc/key.pem"]
    assert (settings.jwt.issuer, settings.jwt.audience) == ("https://id.example", "sync")
    assert settings.quotas == Quotas(10, 11, 12, 13, 14, max_request_bytes=2048)
    assert settings.max_request_bytes == 2048 and settings.rate_per_minute == 0
    assert settings.free_plan_limits == PlanLimits(200, 16384)
    assert settings.protocols == (1,) and settings.admin_key == "k"
    inline = settings_from_environ(
        {"OHARNESS_SYNC_JWT_PUBLIC_KEY": "-----BEGIN PUBLIC KEY-----\nabc"}, no_files
    )
    assert inline.jwt.public_key_pem == "-----BEGIN PUBLIC KEY-----\nabc"


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("OHARNESS_SYNC_MAX_NOTES", "-1", "OHARNESS_SYNC_MAX_NOTES"),
        ("OHARNESS_SYNC_MAX_NOTES", "0", "OHARNESS_SYNC_MAX_NOTES"),
        ("OHARNESS_SYNC_RATE_PER_MINUTE", "fast", "OHARNESS_SYNC_RATE_PER_MINUTE"),
        ("OHARNESS_SYNC_PROTOCOLS", "3", "OHARNESS_SYNC_PROTOCOLS"),
        ("OHARNESS_SYNC_JWT_SECRET", "", "exactly one"),
        ("OHARNESS_SYNC_JWT_SECRET", "short", "32 bytes"),
    ],
)
def test_bad_values_are_clear_errors(name: str, value: str, match: str) -> None:
    environ = {"OHARNESS_SYNC_JWT_SECRET": SECRET, name: value}
    with pytest.raises(ConfigError, match=match):
        settings_from_environ(environ, no_files)


def test_bad_entitlements_files() -> None:
    environ = {"OHARNESS_SYNC_JWT_SECRET": SECRET, "OHARNESS_SYNC_ENTITLEMENTS": "e.json"}
    with pytest.raises(ConfigError, match="not valid JSON"):
        settings_from_environ(environ, lambda path: "{")
    with pytest.raises(ConfigError, match="maxNotes"):
        settings_from_environ(environ, lambda path: '{"free": {"maxNotes": "x"}}')


def test_self_hosting_doc_lists_every_variable_with_its_default() -> None:
    text = (DOCS / "self-hosting.md").read_text(encoding="utf-8")
    for name, default in ENVIRONMENT_DEFAULTS.items():
        rows = [line for line in text.splitlines() if line.startswith(f"| `{name}`")]
        assert rows, f"{name} is not in the variables table of docs/self-hosting.md"
        if default:
            assert re.search(rf"`{re.escape(default)}`", rows[0]), (name, default, rows[0])
