"""The daemon as a user service, for ``oharness setup``: a systemd user unit on Linux, a launchd
agent on macOS; where neither service manager answers, the exact command that starts it.

The service file is written only inside the person's own home (``$XDG_CONFIG_HOME`` must lie
in it too) and is started without ``--project``, in ``$OHARNESS_HOME``, so the daemon never
registers a folder as a project on its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from oharness.cli.installation import install_command, missing_extra
from oharness.cli.setup_steps import Outcome, SetupRequest, environment_of
from oharness.fsio import PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE, atomic_write

UNIT_NAME = "oharness"
LAUNCHD_LABEL = "dev.oharness.daemon"
#: How long ``--start`` waits for a daemon it started to answer.
START_WAIT_S = 30.0
#: The port setup started the daemon on last, where no service manager keeps it.
PORT_FILE = "daemon-port"
#: How long --uninstall waits for the daemon it stopped to go.
STOP_WAIT_S = 10.0


def service_manager(request: SetupRequest) -> str | None:
    """``launchd`` on macOS, ``systemd`` where a systemd user manager answers, else None."""
    path = request.environ.get("PATH", "")
    if sys.platform == "darwin":
        return "launchd" if shutil.which("launchctl", path=path) else None
    systemctl = shutil.which("systemctl", path=path)
    if systemctl is None:
        return None
    try:
        answer = _run(request, [systemctl, "--user", "show-environment"])
    except (OSError, subprocess.TimeoutExpired):
        return None
    return "systemd" if answer.returncode == 0 else None


def service_path(kind: str, request: SetupRequest) -> Path:
    """Where the user service file lives."""
    if kind == "systemd":
        return request.config_home / "systemd" / "user" / f"{UNIT_NAME}.service"
    return request.user_home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


def outside_home(path: Path, user_home: Path) -> bool:
    """Whether ``path`` would land outside the person's own home (a symlink counts where it
    points)."""
    resolved = path.parent.resolve() if path.parent.exists() else path.parent.absolute()
    return not resolved.is_relative_to(user_home.resolve())


def running_daemon(home: Path) -> str | None:
    """The URL of the daemon that answers for ``home``, or None."""
    import httpx2

    try:
        url = str(json.loads((home / "daemon.json").read_text("utf-8"))["url"])
        token = (home / "daemon-token").read_text("utf-8").strip()
        answer = httpx2.get(
            f"{url}/workspaces", headers={"Authorization": f"Bearer {token}"}, timeout=2.0
        )
    except (OSError, ValueError, KeyError, TypeError, httpx2.HTTPError):
        return None
    return url if answer.status_code == 200 else None


def sign_in_link(home: Path, url: str) -> str | None:
    """A new one-time link that signs a browser in to the daemon's Memory page; None when the
    daemon does not give one (an older daemon, or it stopped meanwhile)."""
    import httpx2

    try:
        token = (home / "daemon-token").read_text("utf-8").strip()
        answer = httpx2.post(
            f"{url}/auth/link", headers={"Authorization": f"Bearer {token}"}, timeout=2.0
        )
        link = answer.json().get("url") if answer.status_code == 200 else None
    except (OSError, ValueError, AttributeError, httpx2.HTTPError):
        return None
    return link if isinstance(link, str) else None


def _answering(request: SetupRequest, url: str) -> str:
    said = f"answering at {url}"
    if request.dry_run:  # a new link would end the one printed last
        return said + "; the run itself prints a sign-in link for the Memory page"
    link = sign_in_link(request.home, url)
    return said + (f"; the Memory page: open {link} once in a browser" if link else "")


def nohup_command(request: SetupRequest) -> str:
    """The command that starts the daemon in the background where no service manager runs: in
    ``$OHARNESS_HOME``, as the service would (started in a repository, the daemon would take it
    for its project); it makes the log's folder, and the log and folder are the person's alone
    (umask 077 in a subshell, so the person's own shell keeps its umask and folder)."""
    log = request.home / "logs" / "daemon.log"
    home = shlex.quote(str(request.home))
    return (
        f"(umask 077 && mkdir -p {shlex.quote(str(log.parent))} && cd {home} && "
        f"OHARNESS_HOME={home} nohup "
        f"{shlex.quote(request.executable)} serve --port {request.port} "
        f">> {shlex.quote(str(log))} 2>&1 &)"
    )


def daemon_step(request: SetupRequest) -> Outcome:
    """Install (or remove) the daemon's user service; start it with ``--start``."""
    if not request.install:
        return _remove_service(request)
    missing = missing_extra("server", "the daemon")
    if missing is not None:
        return Outcome("daemon", f"not installed: {missing}", fix=install_command(["server"]))
    kind = service_manager(request)
    if kind is None:
        return _without_manager(request)
    path = service_path(kind, request)
    if outside_home(path, request.user_home):
        return Outcome(
            "daemon",
            f"no service written: {path} is outside your home {request.user_home}",
            fix="point XDG_CONFIG_HOME inside your home (or unset it) and run oharness setup",
        )
    text = _definition(kind, request)
    old = path.read_text("utf-8") if path.is_file() else None
    running = running_daemon(request.home)
    if old == text and (running or not request.start):
        said = f"{kind} user service {path} in place"
        return Outcome("daemon", said + (f"; {_answering(request, running)}" if running else ""))
    if request.dry_run:
        return Outcome("daemon", f"{path} would be written ({kind})", changed=old != text)
    if old != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
    problem = _activate(kind, path, request, restart=old is not None and old != text)
    if problem is not None:
        return Outcome("daemon", f"{path} written; {problem}", changed=True, fix=problem)
    said = f"{kind} user service {path} {'written' if old != text else 'in place'}"
    if not request.start:
        return Outcome("daemon", said + "; starts at login (--start starts it now)", True)
    return _await_daemon(request, said)


def _definition(kind: str, request: SetupRequest) -> str:
    from oharness.daemon.service_file import service_definition

    return service_definition(
        kind,
        executable=request.executable,
        home=request.home,
        project=None,
        folder=request.home,
        host="127.0.0.1",
        port=request.port,
    )


def _activate(kind: str, path: Path, request: SetupRequest, *, restart: bool) -> str | None:
    """Tell the service manager; None when it agreed, else what went wrong."""
    if kind == "systemd":
        commands = [["systemctl", "--user", "daemon-reload"]]
        if request.start:
            verb = ["restart"] if restart else ["enable", "--now"]
            commands += [["systemctl", "--user", "enable", UNIT_NAME]] if restart else []
            commands.append(["systemctl", "--user", *verb, UNIT_NAME])
        else:
            commands.append(["systemctl", "--user", "enable", UNIT_NAME])
    else:
        commands = [["launchctl", "unload", str(path)]] if restart else []
        commands += [["launchctl", "load", "-w", str(path)]] if request.start else []
    for command in commands:
        try:
            answer = _run(request, command)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{shlex.join(command)} failed ({exc}); run it yourself"
        if answer.returncode != 0 and command[1:2] != ["unload"]:
            reason = answer.stderr.strip().splitlines()[-1:] or [f"exit {answer.returncode}"]
            return f"{shlex.join(command)} failed ({reason[0]}); run it yourself"
    return None


def _without_manager(request: SetupRequest) -> Outcome:
    """No service manager here: say the command, or run it with ``--start``."""
    command = nohup_command(request)
    running = running_daemon(request.home)
    if running:
        return Outcome("daemon", f"{_answering(request, running)} (no service manager here)")
    if not request.start:
        return Outcome(
            "daemon",
            "no service manager here (no systemd user session, no launchd); start the daemon "
            f"with: {command}  (or run oharness setup --start)",
        )
    if request.dry_run:
        return Outcome("daemon", f"would start: {command}", changed=True)
    log = request.home / "logs" / "daemon.log"
    log.parent.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    # Kept for the next setup (daemon.json goes with a clean stop, as at a shutdown).
    atomic_write(request.home / PORT_FILE, f"{request.port}\n".encode("ascii"))
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    with open(os.open(log, flags, PRIVATE_FILE_MODE), "ab") as output:
        subprocess.Popen(
            [request.executable, "serve", "--port", str(request.port)],
            cwd=request.home,
            env=environment_of(request),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
    return _await_daemon(request, f"started in the background ({command})")


def _await_daemon(request: SetupRequest, said: str) -> Outcome:
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        url = running_daemon(request.home)
        if url:
            return Outcome("daemon", f"{said}; {_answering(request, url)}", changed=True)
        time.sleep(0.2)
    log = request.home / "logs" / "daemon.log"
    return Outcome(
        "daemon",
        f"{said}; but it did not answer within {START_WAIT_S:.0f} s",
        changed=True,
        fix=f"see {log} (or journalctl --user -u {UNIT_NAME}), then oharness doctor",
    )


def _remove_service(request: SetupRequest) -> Outcome:
    """``--uninstall``: stop and remove the user service we installed."""
    for kind in ("systemd", "launchd"):
        path = service_path(kind, request)
        if not path.is_file():
            continue
        if request.dry_run:
            return Outcome("daemon", f"{path} would be stopped and removed", changed=True)
        if kind == "systemd" and shutil.which("systemctl", path=request.environ.get("PATH", "")):
            _quietly(request, ["systemctl", "--user", "disable", "--now", UNIT_NAME])
        if kind == "launchd" and sys.platform == "darwin":
            _quietly(request, ["launchctl", "unload", "-w", str(path)])
        path.unlink()
        if kind == "systemd":
            _quietly(request, ["systemctl", "--user", "daemon-reload"])
        return Outcome("daemon", f"{kind} user service {path} stopped and removed", True)
    running = running_daemon(request.home)
    if running:
        return _stop_daemon(request, running)
    return Outcome("daemon", "no user service installed; nothing to remove")


def _stop_daemon(request: SetupRequest, url: str) -> Outcome:
    """``--uninstall`` without a service: stop the daemon that answers for this home (started
    by ``setup --start`` or by hand), as a service would be stopped."""
    try:
        pid = int(json.loads((request.home / "daemon.json").read_text("utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        pid = 0
    if pid <= 0 or pid == os.getpid():
        return Outcome(
            "daemon",
            f"no user service installed; a daemon answers at {url}: stop it with Ctrl-C",
            fix="stop the daemon",
        )
    if request.dry_run:
        return Outcome("daemon", f"the daemon at {url} (pid {pid}) would be stopped", True)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while running_daemon(request.home) and time.monotonic() < deadline:
        time.sleep(0.2)
    if running_daemon(request.home):
        return Outcome("daemon", f"the daemon at {url} (pid {pid}) did not stop", fix=f"kill {pid}")
    return Outcome("daemon", f"no user service installed; the daemon at {url} stopped", True)


def _quietly(request: SetupRequest, command: list[str]) -> None:
    # The file is removed either way; a manager that is gone has nothing to stop.
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        _run(request, command)


def _run(request: SetupRequest, command: list[str]) -> subprocess.CompletedProcess[str]:
    executable = shutil.which(command[0], path=request.environ.get("PATH", "")) or command[0]
    return subprocess.run(
        [executable, *command[1:]],
        env={**os.environ, **request.environ},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
