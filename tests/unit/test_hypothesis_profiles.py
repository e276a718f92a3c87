"""The hypothesis profiles of tests/conftest.py: reproducible by default, longer on request."""

from __future__ import annotations

import os

from hypothesis import settings


def test_the_default_profile_draws_the_same_examples_on_every_run() -> None:
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci":
        assert settings.default is not None and settings.default.derandomize


def test_the_dev_profile_searches_longer_with_fresh_randomness() -> None:
    dev = settings.get_profile("dev")
    assert not dev.derandomize
    assert dev.max_examples >= 10 * settings.get_profile("ci").max_examples
