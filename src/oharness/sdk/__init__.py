"""The Python SDK for the local daemon (spec 10.3).

- ``client`` — :class:`DaemonClient` and :func:`find_daemon`; ``async_client`` — its async twin;
- ``connection`` — one kept-alive connection for the per-prompt calls (recall);
- ``shapes`` — the typed shapes the memory methods return.
"""

from oharness.sdk.async_client import AsyncDaemonClient
from oharness.sdk.client import DaemonClient, DaemonError, find_daemon

__all__ = ["AsyncDaemonClient", "DaemonClient", "DaemonError", "find_daemon"]
