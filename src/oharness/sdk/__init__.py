"""The Python SDK for the local daemon (spec 10.3)."""

from oharness.sdk.async_client import AsyncDaemonClient
from oharness.sdk.client import DaemonClient, DaemonError, find_daemon

__all__ = ["AsyncDaemonClient", "DaemonClient", "DaemonError", "find_daemon"]
