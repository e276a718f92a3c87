"""Which project a folder belongs to: the one rule every interface follows (spec 01.8).

The CLI, the daemon, the MCP server, the hooks, the SDK and the library all ask
:func:`discover`; the table of cases is in docs/memory.md ("Which project a folder belongs
to"). In short:

1. Inside ``$OHARNESS_HOME`` there is no project.
2. The nearest folder holding ``.git`` (a folder or a file) is the repository's top level,
   and a boundary: a ``.oharness/project.json`` above it never claims a folder inside it. A
   linked worktree (its ``.git`` file names a git folder with a ``commondir``) is read as its
   main worktree: the same relative folder there, the same markers, the same ``MEMORY/``.
3. Walking up from the start folder to that boundary (to the file-system root outside git),
   the nearest ``.oharness/project.json`` wins — unless its folder can never be a project
   (the home folder, ``$OHARNESS_HOME``, file-system and mount roots, the system temp root,
   system folders), where the marker is ignored. A marker whose folder or files belong to
   another user, or whose folder is world-writable, is refused (nothing is read from it) unless
   the user's own config lists the folder in ``projects.safeDirectories``.
4. Without a marker, the project is the repository's top level, else the start folder; it is
   registered only by a command that writes, and never where rule 3 forbids a project.

This module imports only ``os``, ``stat`` and ``json`` (the per-prompt hook calls it before anything
else is imported).
"""

from __future__ import annotations

import json
import os
import stat

STATE_DIR = ".oharness"
PROJECT_FILE = "project.json"

#: Folders that are never a project themselves (their subfolders may be).
_NEVER_EXACT = frozenset(
    {
        "/home",
        "/Users",
        "/root",
        "/var",
        "/opt",
        "/srv",
        "/mnt",
        "/media",
        "/run",
        "/tmp",
        "/var/tmp",
        "/private",
        "/private/tmp",
        "/private/var",
        "/Volumes",
        "/usr/local",
        "/usr/src",
        "/usr/local/src",
        "/snap",
        "/nix",
    }
)
#: Folders whose whole tree is never a project (the system's own files).
_NEVER_TREE = (
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/proc",
    "/sys",
    "/dev",
    "/System",
    "/Library",
    "/private/etc",
    "/nix/store",
)
#: Inside the system trees, folders where people do keep projects (``WORKDIR /usr/src/app``).
_TREE_EXCEPTIONS = ("/usr/src", "/usr/local/src")


class Discovery:
    """What :func:`discover` found.

    ``root`` is the project folder (a linked worktree's main worktree); ``registered`` is
    True when its marker was found and may be used; ``refused`` says why the project at
    ``root`` may not be used or registered (None when it may); ``worktree`` is the linked
    worktree's own top level when the start folder is in one.
    """

    __slots__ = ("refused", "registered", "root", "worktree")

    def __init__(
        self, root: str, registered: bool, refused: str | None, worktree: str | None
    ) -> None:
        self.root = root
        self.registered = registered
        self.refused = refused
        self.worktree = worktree

    def __repr__(self) -> str:
        return (
            f"Discovery(root={self.root!r}, registered={self.registered}, "
            f"refused={self.refused!r}, worktree={self.worktree!r})"
        )


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip(os.sep) + os.sep)


def _parents(start: str, stop: str | None) -> list[str]:
    """``start`` and its parents, up to ``stop`` (inclusive) or the file-system root."""
    chain = []
    directory = start
    while True:
        chain.append(directory)
        if directory == stop:
            return chain
        parent = os.path.dirname(directory)
        if parent == directory:
            return chain
        directory = parent


def temp_roots() -> set[str]:
    """The system temp folders (``$TMPDIR`` and the usual ones), resolved."""
    roots = {"/tmp", "/var/tmp", "/private/tmp", "/dev/shm"}
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name)
        if value:
            roots.add(os.path.realpath(value))
    return {os.path.realpath(path) for path in roots} | roots


def never_project(folder: str, home: str) -> str | None:
    """Why ``folder`` (resolved) can never be a project, or None.

    ``home`` is ``$OHARNESS_HOME`` resolved.
    """
    user_home = os.path.realpath(os.path.expanduser("~"))
    if folder == user_home:
        return f"{folder} is your home folder"
    if _inside(folder, home):
        return f"{folder} is inside OHARNESS_HOME ({home})"
    if folder == os.path.dirname(folder):
        return f"{folder} is the file-system root"
    if os.path.ismount(folder) and not os.path.lexists(os.path.join(folder, ".git")):
        # A repository mounted into a container (``/workspaces/app``) stays a project.
        return f"{folder} is a mount root"
    temps = temp_roots()
    if folder in temps:
        return f"{folder} is the system temp folder"
    if folder in _NEVER_EXACT:
        return f"{folder} is a system folder"
    if any(_inside(folder, temp) for temp in temps):
        return None  # a folder made in a temp folder (``/dev/shm/x``) may be a project
    if any(_inside(folder, tree) for tree in _NEVER_TREE) and not any(
        _inside(folder, allowed) and folder != allowed for allowed in _TREE_EXCEPTIONS
    ):
        return f"{folder} is a system folder"
    return None


def _git_dir_file(dot_git: str) -> str | None:
    """The git folder a ``.git`` file names (``gitdir: …``), resolved; None if unreadable."""
    try:
        with open(dot_git, encoding="utf-8") as handle:
            first = handle.readline().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:") :].strip()
    return os.path.realpath(os.path.join(os.path.dirname(dot_git), target))


def main_worktree(top: str) -> str | None:
    """The main worktree's top level when ``top`` is a linked worktree's, else None.

    A linked worktree's ``.git`` is a file naming ``<common>/worktrees/<name>``, which holds
    ``commondir``; the main worktree is the folder holding ``<common>`` when that is named
    ``.git`` (a submodule's git folder has no ``commondir``). A bare repository has no main
    worktree: the repository folder itself stands for it, so the worktrees made from it (the
    layout of many parallel sessions) share one project and one ``MEMORY/``, kept in it.
    """
    dot_git = os.path.join(top, ".git")
    if not os.path.isfile(dot_git):
        return None
    git_dir = _git_dir_file(dot_git)
    if git_dir is None:
        return None
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            common = handle.read().strip()
    except (OSError, UnicodeDecodeError):
        # A folder whose .git names a bare repository ("gitdir: ./.bare", the layout that
        # keeps worktrees beside it) is read as that repository too.
        return git_dir if is_bare_repository(git_dir) else None
    common = os.path.realpath(os.path.join(git_dir, common))
    if os.path.basename(common) != ".git":
        return common if is_bare_repository(common) else None
    main = os.path.dirname(common)
    return main if main != top and os.path.isdir(main) else None


def is_bare_repository(folder: str) -> bool:
    """Whether ``folder`` is a bare git repository (``bare = true`` in its config)."""
    try:
        with open(os.path.join(folder, "config"), encoding="utf-8") as handle:
            lines = handle.read(65536).splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    # git writes "\tbare = true" under [core]
    bare = any("".join(line.split()).lower() == "bare=true" for line in lines)
    return bare and os.path.isdir(os.path.join(folder, "objects"))


def git_top(start: str, home: str) -> str | None:
    """The nearest folder at or above ``start`` holding ``.git``, unless it can never be a
    project (a home folder kept in git, say): then None, as outside git."""
    for directory in _parents(start, None):
        if os.path.lexists(os.path.join(directory, ".git")):
            return None if never_project(directory, home) else directory
    return None


def _owner_problem(path: str, what: str) -> str | None:
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return f"{what} {path} is a symbolic link"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"{what} {path} belongs to another user (uid {st.st_uid})"
    if stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH:
        return f"{what} {path} is writable by every user"
    return None


def ownership_problem(folder: str, *, marker: bool) -> str | None:
    """Why the project folder ``folder`` may not be trusted, or None.

    The folder itself must be ours and not world-writable; with ``marker``, so must its
    ``.oharness`` folder and ``project.json``.
    """
    problem = _owner_problem(folder, "the folder")
    if problem is None and marker:
        state = os.path.join(folder, STATE_DIR)
        problem = _owner_problem(state, "the folder") or _owner_problem(
            os.path.join(state, PROJECT_FILE), "the file"
        )
    return problem


def safe_directories(home: str) -> list[str]:
    """``projects.safeDirectories`` of the user's own config (``$OHARNESS_HOME/config.json``).

    Entries are folders (resolved; each vouches for itself and everything below it), or
    ``"*"`` for every folder. A project's own config is never read for this: a repository
    cannot vouch for itself.
    """
    try:
        with open(os.path.join(home, "config.json"), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    projects = data.get("projects") if isinstance(data, dict) else None
    entries = projects.get("safeDirectories") if isinstance(projects, dict) else None
    if not isinstance(entries, list):
        return []
    return [
        entry if entry == "*" else os.path.realpath(os.path.expanduser(entry))
        for entry in entries
        if isinstance(entry, str) and entry
    ]


def refusal(folder: str, home: str, *, marker: bool, role: str = "a project") -> str | None:
    """The one-line refusal for a project folder (or another ``role``: a notes folder) we
    may not trust, naming the fix."""
    problem = ownership_problem(folder, marker=marker)
    if problem is None:
        return None
    allowed = safe_directories(home)
    if any(entry == "*" or _inside(folder, entry) for entry in allowed):
        return None
    return (
        f"{problem}, so {folder} is not used as {role} (another user could plant notes "
        f'there); if you trust it, add "{folder}" to projects.safeDirectories in '
        f"{os.path.join(home, 'config.json')}"
    )


def discover(start: str, home: str) -> Discovery | None:
    """The project of a command run in ``start`` (None inside ``$OHARNESS_HOME``)."""
    start = os.path.realpath(start)
    home = os.path.realpath(home)
    if _inside(start, home):
        return None
    top = git_top(start, home)
    worktree = None
    if top is not None:
        main = main_worktree(top)
        if main is not None:
            worktree = top
            mapped = os.path.join(main, os.path.relpath(start, top))
            while not os.path.isdir(mapped) and mapped != main:
                mapped = os.path.dirname(mapped)
            start, top = mapped, main
    for directory in _parents(start, top):
        if not os.path.isfile(os.path.join(directory, STATE_DIR, PROJECT_FILE)):
            continue
        if (
            never_project(directory, home)
            or os.path.realpath(os.path.join(directory, STATE_DIR)) == home
        ):
            continue  # never obeyed there (another user's /tmp/.oharness, ~, the home's own)
        refused = refusal(directory, home, marker=True)
        return Discovery(directory, refused is None, refused, worktree)
    root = top if top is not None else start
    reason = never_project(root, home)
    refused = (
        f"{reason}, which is never a project; work in a project folder (or keep user notes)"
        if reason
        else refusal(root, home, marker=False)
    )
    return Discovery(root, False, refused, worktree)


def read_project_id(root: str) -> str | None:
    """The id in ``<root>/.oharness/project.json``, or None when it cannot be read."""
    try:
        with open(os.path.join(root, STATE_DIR, PROJECT_FILE), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None
