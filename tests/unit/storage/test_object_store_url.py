"""OHARNESS_SYNC_STORAGE values: what each form opens, and the errors for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from oharness.errors import ConfigError
from oharness.storage.file import FileObjectStore
from oharness.storage.in_memory import MemoryObjectStore
from oharness.storage.s3 import S3ObjectStore
from oharness.storage.url import open_object_store


def open_file_store(url: str, environ: dict[str, str] | None = None) -> FileObjectStore:
    store = open_object_store(url, environ or {})
    assert isinstance(store, FileObjectStore)
    return store


def test_file_url_with_an_absolute_path(tmp_path: Path) -> None:
    assert open_file_store(f"file://{tmp_path}/sync").root == tmp_path / "sync"


def test_file_url_with_a_relative_path_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert open_file_store("file://data/sync").root == tmp_path / "data" / "sync"


@pytest.mark.parametrize("form", ["~/sync", "file://~/sync"])
def test_a_tilde_starts_at_home_from_the_given_environment(tmp_path: Path, form: str) -> None:
    assert open_file_store(form, {"HOME": str(tmp_path)}).root == tmp_path / "sync"


def test_a_tilde_without_home_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="HOME is not set"):
        open_object_store("~/sync", {})


def test_a_bare_path_is_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert open_file_store(str(tmp_path)).root == tmp_path
    monkeypatch.chdir(tmp_path)
    assert open_file_store("./relative").root == tmp_path / "relative"
    assert open_file_store("plain-name").root == tmp_path / "plain-name"


def test_memory_url_gives_a_fresh_in_process_store() -> None:
    first = open_object_store("memory://", {})
    second = open_object_store("memory://", {})
    assert isinstance(first, MemoryObjectStore) and isinstance(second, MemoryObjectStore)
    first.put("k", b"x")
    assert second.get("k") is None


def test_s3_url_with_a_prefix_uses_the_aws_variables() -> None:
    environ = {
        "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_REGION": "auto",
    }
    store = open_object_store("s3://oharness-sync/prod/memory/", environ)
    assert isinstance(store, S3ObjectStore)
    assert (store.bucket, store.prefix) == ("oharness-sync", "prod/memory/")
    assert repr(store) == "S3ObjectStore(s3://oharness-sync/prod/memory/)"


def test_s3_url_without_a_prefix() -> None:
    store = open_object_store("S3://bucket.example", {})
    assert isinstance(store, S3ObjectStore)
    assert (store.bucket, store.prefix) == ("bucket.example", "")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("", "it is empty"),
        ("   ", "it is empty"),
        ("ftp://host/x", "scheme 'ftp' is not supported"),
        ("s3:bucket", "has no '://'"),
        ("file://", "names no directory"),
        ("memory://name", "takes nothing"),
        ("s3://", "is not a bucket name"),
        ("s3://Upper", "is not a bucket name"),
        ("s3://ab", "is not a bucket name"),
        ("s3://bucket/../escape", "prefix is invalid"),
        ("s3://bucket/a//b", "prefix is invalid"),
        ("s3://bucket/x?region=eu", "no credentials, query or fragment"),
    ],
)
def test_bad_urls_name_the_variable_and_the_accepted_forms(url: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason) as raised:
        open_object_store(url, {})
    message = raised.value.message
    assert message.startswith("OHARNESS_SYNC_STORAGE=")
    assert "file:///absolute/path" in message and "s3://BUCKET/PREFIX" in message
    assert raised.value.details == {"key": "OHARNESS_SYNC_STORAGE"}


def test_credentials_in_a_url_are_refused_and_not_echoed() -> None:
    with pytest.raises(ConfigError) as raised:
        open_object_store("s3://AKIA:supersecret@bucket/p", {})
    assert "supersecret" not in raised.value.message
    assert "hidden" in raised.value.message
