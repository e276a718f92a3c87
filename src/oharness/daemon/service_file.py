"""User service definitions that start the daemon at login (``--print-service``).

Printed by ``serve --print-service`` for a person to install, and installed by ``oharness
setup`` (which writes only inside the person's own home):

- systemd: save as ``~/.config/systemd/user/oharness.service``, then
  ``systemctl --user daemon-reload && systemctl --user enable --now oharness``;
- launchd: save as ``~/Library/LaunchAgents/dev.oharness.daemon.plist``, then
  ``launchctl load -w ~/Library/LaunchAgents/dev.oharness.daemon.plist``.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape


def _systemd_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + '"'


def service_definition(
    kind: str,
    *,
    executable: str,
    home: Path,
    project: Path | None,
    host: str,
    port: int,
    folder: Path | None = None,
) -> str:
    """The text of a systemd user unit or a launchd agent for ``oharness serve``: with
    ``project`` its default workspace, else (``oharness setup``) none, started in ``folder``
    (the person's home: a folder the daemon never registers as a project)."""
    arguments = [executable, "serve", "--host", host, "--port", str(port)]
    if project is not None:
        arguments += ["--project", str(project)]
    working = project if project is not None else folder
    if working is None:
        raise ValueError("a service needs its project or its working folder")
    if kind == "systemd":
        command = " ".join(_systemd_quote(argument) for argument in arguments)
        return (
            "[Unit]\n"
            "Description=oharness memory daemon\n"
            "After=network.target\n\n"
            "[Service]\n"
            f"ExecStart={command}\n"
            f"Environment={_systemd_quote('OHARNESS_HOME=' + str(home))}\n"
            f"WorkingDirectory={_systemd_quote(str(working))}\n"
            "Restart=on-failure\n"
            "KillSignal=SIGTERM\n"
            "TimeoutStopSec=30\n\n"
            "[Install]\n"
            "WantedBy=default.target\n"
        )
    if kind == "launchd":
        items = "\n".join(f"    <string>{escape(argument)}</string>" for argument in arguments)
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
            '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
            '<plist version="1.0">\n<dict>\n'
            "  <key>Label</key>\n  <string>dev.oharness.daemon</string>\n"
            f"  <key>ProgramArguments</key>\n  <array>\n{items}\n  </array>\n"
            "  <key>EnvironmentVariables</key>\n  <dict>\n"
            f"    <key>OHARNESS_HOME</key>\n    <string>{escape(str(home))}</string>\n"
            "  </dict>\n"
            f"  <key>WorkingDirectory</key>\n  <string>{escape(str(working))}</string>\n"
            "  <key>RunAtLoad</key>\n  <true/>\n"
            "  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n"
            "  </dict>\n</dict>\n</plist>\n"
        )
    raise ValueError(f"unknown service kind {kind!r}: systemd or launchd")
