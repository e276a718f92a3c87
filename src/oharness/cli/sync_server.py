"""``oharness sync-server serve|token``: run the self-hosted sync server, mint dev tokens (08).

Configuration comes from the ``OHARNESS_SYNC_*`` environment variables (docs/self-hosting.md);
``--storage`` overrides ``OHARNESS_SYNC_STORAGE``. For an ASGI server of your own, point it at
the factory: ``uvicorn --factory oharness.cli.sync_server:app_from_environment``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from oharness.cli.context import emit_json
from oharness.errors import ConfigError
from oharness.sync.protocol import Plan, TeamEntitlement

if TYPE_CHECKING:
    from starlette.applications import Starlette

# The server stack (Starlette, uvicorn, PyJWT) is imported inside the commands: every other
# `oharness` command starts without paying for it.

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
DEFAULT_TOKEN_TTL = 30 * 24 * 3600
_FACTORY = "oharness.cli.sync_server:app_from_environment"


@click.group("sync-server")
def sync_server() -> None:
    """Run the self-hosted sync server and mint development tokens."""


def app_from_environment() -> Starlette:
    """The server configured from this process's environment (an ASGI app factory)."""
    from oharness.server.environment import create_app_from_env
    from oharness.server.logs import configure_json_logging

    configure_json_logging(_log_level(os.environ))
    return create_app_from_env(os.environ)


def _log_level(environ: Mapping[str, str]) -> int:
    name = environ.get("OHARNESS_SYNC_LOG_LEVEL", "info").upper()
    level = logging.getLevelName(name)
    return level if isinstance(level, int) else logging.INFO


@sync_server.command()
@click.option(
    "--storage",
    default=None,
    metavar="URL",
    help="file:///PATH, s3://BUCKET/PREFIX or a directory (default: $OHARNESS_SYNC_STORAGE).",
)
@click.option(
    "--host",
    envvar="OHARNESS_SYNC_HOST",
    default=DEFAULT_HOST,
    show_default=True,
    help="Address to listen on ($OHARNESS_SYNC_HOST); 0.0.0.0 for all interfaces.",
)
@click.option(
    "--port",
    envvar="OHARNESS_SYNC_PORT",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="TCP port ($OHARNESS_SYNC_PORT).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Server processes on this machine (replicas share nothing but the storage).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def serve(storage: str | None, host: str, port: int, workers: int, debug: bool) -> None:
    """Start the sync server (uvicorn) on the configured storage."""
    import uvicorn

    from oharness.server.environment import create_app_from_env
    from oharness.server.logs import configure_json_logging, log_event

    if storage is not None:
        # Set in this process's environment so worker processes see it too.
        os.environ["OHARNESS_SYNC_STORAGE"] = storage
    level = _log_level(os.environ)
    try:
        app = create_app_from_env(os.environ)  # a broken configuration stops here, clearly
    except ConfigError as exc:
        if storage is not None and exc.details.get("key") == "OHARNESS_SYNC_STORAGE":
            raise ConfigError(
                exc.message.replace("OHARNESS_SYNC_STORAGE", "--storage"), key="--storage"
            ) from exc
        raise
    _check_port_free(host, port)
    configure_json_logging(level)
    log_event(logging.INFO, "starting", host=host, port=port, workers=workers)
    uvicorn.run(
        app if workers == 1 else _FACTORY,
        factory=workers > 1,
        workers=workers if workers > 1 else None,
        host=host,
        port=port,
        log_config=None,
        log_level=level,
        access_log=False,
        server_header=False,
        ws="none",
    )


def _check_port_free(host: str, port: int) -> None:
    """One clear line when the address cannot be listened on (instead of uvicorn's logs)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigError(f"--host {host!r} cannot be resolved ({exc})", key="--host") from exc
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port} ({exc.strerror or exc}): another process may "
                "hold the port; choose another with --port",
                key="--port",
            ) from exc


def _team(value: str) -> TeamEntitlement:
    team_id, _, plan = value.partition(":")
    if not team_id or plan not in ("free", "paid"):
        raise click.BadParameter(f"{value!r}: use ID:PLAN, e.g. t1:paid", param_hint="--team")
    return TeamEntitlement(team_id, "paid" if plan == "paid" else "free")


@sync_server.command()
@click.option("--user", "user_id", required=True, help="The user id (the token's subject).")
@click.option("--plan", type=click.Choice(["free", "paid"]), default="free", show_default=True)
@click.option("--team", "teams", multiple=True, metavar="ID:PLAN", help="A team, e.g. t1:paid.")
@click.option(
    "--ttl",
    type=click.IntRange(1, None),
    default=DEFAULT_TOKEN_TTL,
    show_default=True,
    help="Seconds until the token expires.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def token(
    user_id: str, plan: str, teams: tuple[str, ...], ttl: int, as_json: bool, debug: bool
) -> None:
    """Print a development token signed with OHARNESS_SYNC_JWT_SECRET."""
    from oharness.server.auth import mint_token
    from oharness.server.config import JwtSettings

    secret = os.environ.get("OHARNESS_SYNC_JWT_SECRET", "").strip()
    if not secret:
        raise ConfigError(
            "OHARNESS_SYNC_JWT_SECRET is not set: the token command signs with the server's "
            "shared secret (set the same value for the server)",
            key="OHARNESS_SYNC_JWT_SECRET",
        )
    JwtSettings(secret=secret)  # the same length check the server applies
    parsed_teams = tuple(_team(value) for value in teams)
    chosen: Plan = "paid" if plan == "paid" else "free"
    now = int(time.time())
    minted = mint_token(
        secret,
        user_id,
        now=now,
        ttl_seconds=ttl,
        plan=chosen,
        teams=parsed_teams,
        issuer=os.environ.get("OHARNESS_SYNC_JWT_ISSUER", "").strip() or None,
        audience=os.environ.get("OHARNESS_SYNC_JWT_AUDIENCE", "").strip() or None,
    )
    if as_json:
        emit_json(
            {
                "token": minted,
                "userId": user_id,
                "plan": chosen,
                "teams": [team.to_json() for team in parsed_teams],
                "expiresAt": (now + ttl) * 1000,
            }
        )
    else:
        click.echo(minted)
