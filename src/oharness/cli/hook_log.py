"""The hook log, ``$OHARNESS_HOME/logs/hooks.log``: where a hook that must stay silent says why.

A hook prints nothing and exits 0 whatever goes wrong (it must never block the prompt); the
reason goes here, one line per failure, the file rotated past :data:`MAX_LOG_BYTES`. Used by the
hooks (:mod:`oharness.cli.hook`) and by the detached capture pass they start
(:mod:`oharness.cli.capture_run`); it imports nothing but ``os`` until it writes.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: a hook pays for every import
if TYPE_CHECKING:
    from typing import Final

MAX_LOG_BYTES: Final = 1024 * 1024


def log_failure(home: str, event: str, reason: str, agent: str = "claude-code") -> None:
    """Append one line to the hook log (rotated past 1 MiB). A log that cannot be written is
    the one failure left unsaid: saying it anywhere else would break the hook's silence."""
    import time

    from oharness.bridges.prompt_hook import make_private_folder

    try:
        directory = make_private_folder(home, "logs")
        path = os.path.join(directory, "hooks.log")
        if os.path.exists(path) and os.stat(path).st_size > MAX_LOG_BYTES:
            os.replace(path, os.path.join(directory, "hooks.log.1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        opened = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # the home's rule
        with open(opened, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(f"{stamp} {agent} {event}: {reason}\n")
    except OSError:
        return
