"""The CLI's lazy command tables: every name loads the command it says, under that name."""

from __future__ import annotations

import click
import pytest

from oharness.cli.lazy import LazyGroup
from oharness.cli.main import cli
from oharness.cli.memory import memory


@pytest.mark.parametrize("group", [cli, memory], ids=["oharness", "memory"])
def test_every_lazy_command_loads(group: click.Group) -> None:
    assert isinstance(group, LazyGroup)
    ctx = click.Context(group)
    for name in group.lazy:
        command = group.get_command(ctx, name)
        assert isinstance(command, click.Command), name
    assert set(group.lazy) <= set(group.list_commands(ctx))


def test_a_name_that_is_no_command_is_refused() -> None:
    group = LazyGroup(name="g", lazy={"x": "oharness.cli.lazy:LazyGroup"})
    with pytest.raises(TypeError, match="not a click command"):
        group.get_command(click.Context(group), "x")
