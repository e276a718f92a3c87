"""The exception tree's shared vocabulary: one definition of which failures are transient."""

from __future__ import annotations

import pytest

from oharness.errors import TRANSIENT_CODES, OHarnessError, SyncError, is_transient


@pytest.mark.parametrize("code", ["unavailable", "network", "rate_limited"])
def test_unreachable_and_rate_limited_failures_are_worth_retrying(code: str) -> None:
    assert is_transient(code)
    assert SyncError("try again later", code=code).transient


@pytest.mark.parametrize(
    "code", ["sync", "unauthorized", "account_erased", "invalid", "conflict", "config", "", None]
)
def test_other_failures_wait_for_someone_to_act(code: str | None) -> None:
    assert not is_transient(code)
    if code is not None:
        assert not SyncError("fix it first", code=code).transient


def test_the_definition_is_the_documented_set() -> None:
    assert frozenset({"unavailable", "network", "rate_limited"}) == TRANSIENT_CODES


def test_errors_describe_themselves_as_json() -> None:
    error = SyncError("slow down", code="rate_limited", retry_after=3.0, scope="user")
    assert error.to_dict() == {"code": "rate_limited", "message": "slow down", "scope": "user"}
    assert isinstance(error, OHarnessError) and error.retry_after == 3.0


def test_every_exception_the_library_defines_derives_from_the_root() -> None:
    """A caller's ``except OHarnessError`` catches whatever oharness raises on purpose, and the
    tree in the docstring of ``oharness.errors`` names every one of them."""
    import importlib
    import inspect
    import pkgutil
    import re
    import warnings

    import oharness
    import oharness.errors as errors_module

    outside = []
    defined: set[str] = set()
    for info in pkgutil.walk_packages(oharness.__path__, "oharness."):
        try:
            with warnings.catch_warnings():  # the deprecated paths warn when imported
                warnings.simplefilter("ignore", DeprecationWarning)
                module = importlib.import_module(info.name)
        except ImportError:  # an optional extra not installed here
            continue
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
                and not name.startswith("_")  # private control flow that never leaves
            ):
                defined.add(name)
                if not issubclass(value, OHarnessError):
                    outside.append(f"{info.name}.{name}")
    assert outside == []
    listed = {"OHarnessError", *re.findall(r"── (\w+)", errors_module.__doc__ or "")}
    assert defined == listed  # the tree in errors.py's docstring is the one in the code
