"""Permission modes, rules and exemptions (spec 09.3, 02.3)."""

from __future__ import annotations

import pytest

from oharness.errors import ConfigError
from oharness.harness.permission import (
    PERMISSION_MODES,
    PermissionClass,
    PermissionMode,
    PermissionRules,
    decide,
    parse_mode,
    rules_from_config,
)

NONE = PermissionRules()


def action(
    permission: PermissionClass,
    mode: PermissionMode,
    *,
    rules: PermissionRules = NONE,
    name: str = "tool",
    always_ask: bool = False,
    exempt: bool = False,
) -> str:
    return decide(
        name=name,
        permission=permission,
        mode=mode,
        rules=rules,
        always_ask=always_ask,
        exempt=exempt,
    ).action


@pytest.mark.parametrize(
    ("mode", "read", "write", "destructive"),
    [
        ("default", "allow", "ask", "ask"),
        ("acceptEdits", "allow", "allow", "ask"),
        ("plan", "allow", "deny", "deny"),
        ("bypassPermissions", "allow", "allow", "allow"),
    ],
)
def test_the_four_modes(mode: PermissionMode, read: str, write: str, destructive: str) -> None:
    assert action("read", mode) == read
    assert action("write", mode) == write
    assert action("destructive", mode) == destructive


@pytest.mark.parametrize("mode", PERMISSION_MODES)
def test_an_exempt_write_runs_without_asking_except_in_plan_mode(mode: PermissionMode) -> None:
    expected = "deny" if mode == "plan" else "allow"
    assert action("write", mode, name="remember", exempt=True) == expected


@pytest.mark.parametrize("mode", PERMISSION_MODES)
def test_always_ask_asks_in_every_mode_but_plan(mode: PermissionMode) -> None:
    expected = "deny" if mode == "plan" else "ask"
    assert action("destructive", mode, name="forget", always_ask=True) == expected
    allow_all = PermissionRules(allow=("*",))
    assert action("destructive", mode, rules=allow_all, name="forget", always_ask=True) == expected


def test_rules_apply_in_every_mode_deny_first() -> None:
    rules = PermissionRules(allow=("mem*",), ask=("remember",), deny=("rem*",))
    for mode in PERMISSION_MODES:
        assert action("write", mode, rules=rules, name="remember", exempt=True) == "deny"
    asking = PermissionRules(ask=("remember",))
    assert action("write", "bypassPermissions", rules=asking, name="remember", exempt=True) == "ask"
    allowing = PermissionRules(allow=("deploy_*",))
    assert action("destructive", "default", rules=allowing, name="deploy_prod") == "allow"
    assert action("destructive", "default", rules=allowing, name="Deploy_prod") == "ask"


def test_a_refusal_says_why() -> None:
    decision = decide(name="remember", permission="write", mode="plan", rules=NONE, exempt=True)
    assert "plan mode" in decision.reason


def test_modes_and_rules_from_config() -> None:
    assert parse_mode("acceptEdits") == "acceptEdits"
    with pytest.raises(ConfigError, match="unknown permission mode"):
        parse_mode("yolo")
    rules, mode = rules_from_config(
        {"permissions": {"allow": ["memory"], "deny": ["forget"], "defaultMode": "plan"}}
    )
    assert rules == PermissionRules(allow=("memory",), deny=("forget",)) and mode == "plan"
    assert rules_from_config({}) == (PermissionRules(), None)
    with pytest.raises(ConfigError, match=r"permissions\.ask"):
        rules_from_config({"permissions": {"ask": "remember"}})
    with pytest.raises(ConfigError, match="defaultMode"):
        rules_from_config({"permissions": {"defaultMode": "sometimes"}})
