"""``oharness hook claude-code|codex EVENT``: the prompt hooks and the capture hooks.

Events: ``user-prompt-submit`` and ``session-start`` (recall, the Memory index), ``stop``,
``pre-compact`` and ``session-end`` (capture, :mod:`oharness.bridges.capture_hook`). ``oharness
hook capture-run JOB`` is the detached pass a capture hook starts when no daemon runs.

Runs without click and without the rest of the CLI (a hook runs on every prompt): the entry
point hands ``hook …`` arguments straight here, and until the daemon has answered nothing but
``os``, ``sys``, ``json``, :mod:`oharness.bridges.prompt_hook` and the hook log
(:mod:`oharness.cli.hook_log`) is imported. Whatever goes wrong, the hook prints nothing, exits
0 (a hook must never block the prompt) and appends the reason to the hook log.
"""

from __future__ import annotations

import json
import os
import sys

from oharness.cli.hook_log import log_failure

TYPE_CHECKING = False  # not typing's: a hook pays for every import
if TYPE_CHECKING:
    from typing import Final

MAX_INPUT_BYTES: Final = 4 * 1024 * 1024
EVENTS: Final = ("user-prompt-submit", "session-start", "stop", "pre-compact", "session-end")
AGENTS: Final = ("claude-code", "codex")  # Codex's hooks take Claude Code's input and output
#: Thread counts of the BLAS libraries numpy may load (a person's own setting wins).
BLAS_THREADS: Final = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
USAGE: Final = (
    "usage: oharness hook claude-code|codex "
    "user-prompt-submit|session-start|stop|pre-compact|session-end"
)


def hook_home() -> str:
    """``$OHARNESS_HOME``, else ``~/.oharness``."""
    environ_home = os.environ.get("OHARNESS_HOME")
    return os.path.expanduser(environ_home) if environ_home else os.path.expanduser("~/.oharness")


def run_hook(args: list[str]) -> int:
    """Run one hook; always 0 except for a wrong command line (2)."""
    if len(args) == 2 and args[0] == "capture-run":
        from oharness.cli.capture_run import run_capture_command

        return run_capture_command(hook_home(), args[1])
    if len(args) != 2 or args[0] not in AGENTS or args[1] not in EVENTS:
        if args[-1:] in (["-h"], ["--help"]):
            print(USAGE)
            return 0
        print(USAGE, file=sys.stderr)
        return 2
    agent, event = args
    home = hook_home()
    # numpy's OpenBLAS starts a thread per core at import, which spins for a while: a third
    # more CPU for a process that lives for one prompt and does no linear algebra.
    for variable in BLAS_THREADS:
        os.environ.setdefault(variable, "1")
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(raw) > MAX_INPUT_BYTES:
            raise ValueError(f"hook input over {MAX_INPUT_BYTES} bytes")
        payload = json.loads(raw.decode("utf-8"))
        if event == "user-prompt-submit":
            from oharness.bridges.prompt_hook import handle_prompt

            output = handle_prompt(
                payload, home, log=lambda reason: log_failure(home, event, reason, agent)
            )
        elif event == "session-start":
            from oharness.bridges.capture_hook import announce_saved, note_resume
            from oharness.bridges.claude_hook import handle_session_start

            note_resume(agent, payload, home)
            started = handle_session_start(
                payload, home, log=lambda reason: log_failure(home, event, reason, agent)
            )
            output = announce_saved(started, payload, home)
        else:
            from oharness.bridges.capture_hook import handle_capture

            output = handle_capture(
                agent, event, payload, home, lambda reason: log_failure(home, event, reason, agent)
            )
    except Exception as exc:  # a hook failure must never block the prompt
        detail = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
        log_failure(home, event, detail, agent)
        output = _memory_off(exc, home) if event == "session-start" else ""
    if output:
        try:
            sys.stdout.write(output + "\n")
            sys.stdout.flush()
        except OSError as exc:
            log_failure(home, event, f"cannot write to stdout: {exc}", agent)
    return 0


def _memory_off(exc: Exception, home: str) -> str:
    """What the person sees once per session when memory cannot start (a broken config file,
    an unusable home): the agent's ``systemMessage``, shown to them, never to the model."""
    from oharness.errors import OHarnessError

    if isinstance(exc, OHarnessError):
        reason = exc.message
    elif isinstance(exc, ValueError):  # what the agent sent: not JSON, no usable cwd...
        reason = f"the agent's hook input cannot be used ({str(exc)[:200]})"
    else:
        reason = f"unexpected error; see {os.path.join(home, 'logs', 'hooks.log')}"
    return json.dumps({"systemMessage": f"oharness: memory is off for this session: {reason}"})
