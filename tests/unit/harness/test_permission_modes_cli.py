"""The chat command's mode choices match the permission module's."""

from oharness.cli.chat import PERMISSION_MODE_NAMES
from oharness.harness.permission import PERMISSION_MODES


def test_chat_offers_exactly_the_permission_modes() -> None:
    assert tuple(PERMISSION_MODE_NAMES) == tuple(PERMISSION_MODES)
