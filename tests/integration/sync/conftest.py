from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
_TESTS = str(Path(__file__).resolve().parents[2])
for _path in (_HERE, _TESTS):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from cliworld import Server, Storage, running_server, storage_for  # noqa: E402

from s3server import s3_server  # noqa: E402, F401


@pytest.fixture(params=["file", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """The real server's storage for the CLI tests: file storage, then the S3 test server."""
    s3 = request.getfixturevalue("s3_server") if request.param == "s3" else None
    return storage_for(request.param, tmp_path, s3)


@pytest.fixture
def server(storage: Storage, tmp_path: Path) -> Iterator[Server]:
    """``oharness sync-server serve`` on :func:`storage` (files that need another server
    define their own ``server``)."""
    with running_server(storage, tmp_path) as running:
        yield running
