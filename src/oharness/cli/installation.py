"""What is installed here, and the exact command that adds what is missing.

``setup``, ``integrate`` and ``doctor`` never write or recommend an entry that cannot start: an
MCP entry needs the ``mcp`` extra, the daemon the ``server`` extra. The command that adds an
extra depends on how this copy was installed (pipx, ``uv tool``, pip; from a clone, a wheel or
an index), read from the standard ``direct_url.json`` of the installed distribution.
"""

from __future__ import annotations

import json
import shlex
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import unquote, urlparse

#: The extras and the modules that tell whether each is installed.
EXTRAS = {
    "server": ("fastapi", "uvicorn", "jwt"),
    "mcp": ("mcp", "tomlkit"),
    "s3": ("boto3",),
}


def installed_extras() -> dict[str, bool]:
    """Each extra: are all its modules importable here?"""
    return {
        name: all(find_spec(module) is not None for module in modules)
        for name, modules in EXTRAS.items()
    }


def oharness_command() -> str:
    """The absolute path of this ``oharness`` executable (agents and services start it without
    our PATH)."""
    sibling = Path(sys.executable).with_name("oharness")
    if sibling.is_file():
        return str(sibling)
    launched = Path(sys.argv[0])
    return str(launched.resolve()) if launched.name == "oharness" else "oharness"


def _source() -> tuple[str, bool]:
    """Where this copy was installed from (a folder, a wheel, or the index name) and whether
    it is an editable install."""
    try:
        raw = metadata.distribution("oharness").read_text("direct_url.json")
        origin = json.loads(raw) if raw else {}
    except (metadata.PackageNotFoundError, ValueError):
        origin = {}
    url = origin.get("url") if isinstance(origin, dict) else None
    if not isinstance(url, str):
        return "oharness", False
    editable = bool((origin.get("dir_info") or {}).get("editable"))
    parsed = urlparse(url)
    return (unquote(parsed.path) if parsed.scheme == "file" else url), editable


def install_command(extras: list[str]) -> str:
    """The one command that adds ``extras`` to this installation of oharness."""
    wanted = ",".join(sorted(set(extras) | {"mcp", "server"}))
    source, editable = _source()
    prefix = Path(sys.prefix)
    if prefix.parent.name == "venvs" and "pipx" in prefix.parts:
        return f"pipx install --force {shlex.quote(f'{source}[{wanted}]')}"
    if prefix.parent.name == "tools" and "uv" in prefix.parts:
        reference = f"oharness[{wanted}]" + (f" @ {Path(source).as_uri()}" if "/" in source else "")
        return f"uv tool install --force {shlex.quote(reference)}"
    pip = f"{shlex.quote(sys.executable)} -m pip install"
    return f"{pip} {'-e ' if editable else ''}{shlex.quote(f'{source}[{wanted}]')}"


def missing_extra(extra: str, needed_by: str) -> str | None:
    """Why ``needed_by`` could not start here (the extra is missing, with the command that
    adds it), or None when it could."""
    if installed_extras()[extra]:
        return None
    return (
        f"{needed_by} needs the {extra} extra, which is not installed here; "
        f"add it with: {install_command([extra])}"
    )
