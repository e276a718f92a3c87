"""The local daemon (spec 10): sessionless memory tasks, events, recall, background sync.

:func:`create_app` builds the ASGI app over :class:`DaemonOptions`; ``oharness serve`` runs it.

- ``app`` — the ASGI app: middleware, routers, start and stop; ``serve`` — running it (one per
  home, its address file, uvicorn); ``service_file`` — user service definitions for login;
- ``state`` — everything a daemon holds, built from :class:`DaemonOptions`;
- ``workspaces`` — the hosted projects (the default one and any registered);
- ``mcp_socket`` — agents' MCP sessions relayed by ``oharness mcp``;
- ``events`` — the event stream (publishers never wait for subscribers);
- ``auth`` — the bearer token, the page's cookie, Host and Origin; ``guards`` — the body cap and
  what every answer goes through; ``sanitize`` — error details safe to send and log;
- ``errors`` — the daemon's refusals (HTTP errors and task failures);
- ``routes/`` — the HTTP API, one module per capability;
- ``tasks/`` — the sessionless memory tasks and their serial lanes;
- ``background/`` — background sync, consolidation and the folder watch;
- ``page/`` — the Memory page.
"""

from oharness.daemon.app import create_app
from oharness.daemon.state import DaemonOptions

__all__ = ["DaemonOptions", "create_app"]
