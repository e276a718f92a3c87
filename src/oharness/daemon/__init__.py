"""The local daemon (spec 10): sessionless memory tasks, events, recall, background sync."""

from oharness.daemon.app import create_app
from oharness.daemon.state import DaemonOptions

__all__ = ["DaemonOptions", "create_app"]
