"""Who may talk to the daemon: the token file, the bearer header, the page's cookie with its
CSRF token on every unsafe method, the one-time sign-in code, and the Host header's name."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path

import pytest
from starlette.requests import HTTPConnection

from oharness.daemon.auth import (
    COOKIE_NAME,
    LOOPBACK_HOSTS,
    DaemonAuth,
    host_name,
    load_or_create_token,
)
from oharness.daemon.errors import DaemonApiError
from oharness.errors import StorageError

NO_CREDENTIAL = "send 'Authorization: Bearer <token>' (the token is in $OHARNESS_HOME/daemon-token)"
WRONG_TOKEN = "the daemon token is wrong (see daemon-token)"
CSRF_FIX = "(GET /auth/csrf gives it; a reload of the page takes it up)"
NEEDS_CSRF = f"a browser request that changes something needs the X-CSRF-Token {CSRF_FIX}"
WRONG_CSRF = f"the X-CSRF-Token header is wrong {CSRF_FIX}"
UNSAFE = ["POST", "PUT", "PATCH", "DELETE"]


def _connection(
    *,
    authorization: str | None = None,
    cookie: str | None = None,
    csrf: str | None = None,
    host: str = "127.0.0.1:4318",
    client: tuple[str, int] | None = ("127.0.0.1", 5),
) -> HTTPConnection:
    headers = [(b"host", host.encode())]
    if authorization is not None:
        headers.append((b"authorization", authorization.encode()))
    if cookie is not None:
        headers.append((b"cookie", f"{COOKIE_NAME}={cookie}".encode()))
    if csrf is not None:
        headers.append((b"x-csrf-token", csrf.encode()))
    return HTTPConnection({"type": "http", "headers": headers, "client": client})


def _refusal(auth: DaemonAuth, connection: HTTPConnection, method: str = "GET") -> DaemonApiError:
    with pytest.raises(DaemonApiError) as refused:
        auth.check(connection, method)
    return refused.value


# The token file.


def test_the_first_start_writes_a_private_token_and_later_starts_read_it(tmp_path: Path) -> None:
    home = tmp_path / "home" / "nested"
    token = load_or_create_token(home)
    path = home / "daemon-token"
    assert len(token) == 43  # 32 random bytes, URL-safe base64 without padding
    assert path.read_text("utf-8") == token + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_token(home) == token


def test_a_token_readable_by_others_is_kept_and_made_private(tmp_path: Path) -> None:
    path = tmp_path / "daemon-token"
    path.write_text("  kept-token \n", "utf-8")
    os.chmod(path, 0o644)
    assert load_or_create_token(tmp_path) == "kept-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_empty_token_file_is_replaced_by_a_new_token(tmp_path: Path) -> None:
    path = tmp_path / "daemon-token"
    path.write_text("\n", "utf-8")
    token = load_or_create_token(tmp_path)
    assert token and path.read_text("utf-8") == token + "\n"


def test_an_unreadable_token_file_is_a_storage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "daemon-token").mkdir()  # a folder where the file should be
    with pytest.raises(StorageError) as refused:
        load_or_create_token(tmp_path)
    assert str(refused.value) == f"cannot read {tmp_path / 'daemon-token'}: Is a directory"
    assert refused.value.details == {"path": str(tmp_path / "daemon-token")}


# Host names.


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:4318", "127.0.0.1"),
        (" LocalHost:80 ", "localhost"),
        ("localhost", "localhost"),
        ("[::1]:4318", "::1"),
        ("[::1]", "::1"),
        ("[::1", "[::1"),  # no closing bracket: left as it is (and so not allowed)
        ("::1", "::1"),  # a bare IPv6 address has no port to cut
    ],
)
def test_the_host_name_of_a_host_header(header: str, name: str) -> None:
    assert host_name(header) == name


def test_for_host_allows_loopback_the_bound_host_and_the_extra_names() -> None:
    auth = DaemonAuth.for_host("t", "Box.LAN:4318", extra=["[fd00::2]:4318", "Other"])
    assert auth.allowed_hosts == LOOPBACK_HOSTS | {"box.lan", "fd00::2", "other"}
    assert auth.token == "t"


# The bearer token.


@pytest.mark.parametrize("header", ["Bearer token", "bearer token", "BEARER  token "])
def test_the_right_bearer_token_passes_whatever_the_scheme_case(header: str) -> None:
    assert DaemonAuth("token").check(_connection(authorization=header), "POST") == "bearer"


def test_a_wrong_bearer_token_is_refused_and_slowed() -> None:
    auth = DaemonAuth("token")
    refusals = [
        _refusal(auth, _connection(authorization="Bearer nope")) for _ in range(auth.backoff.free)
    ]
    assert {(r.status, r.code, str(r)) for r in refusals} == {(401, "token_required", WRONG_TOKEN)}
    slowed = _refusal(auth, _connection(authorization="Bearer nope"))
    assert (slowed.status, slowed.code, slowed.retry_after) == (429, "too_many_attempts", 1)


@pytest.mark.parametrize("header", [None, "Bearer ", "Basic token", "token"])
def test_no_bearer_token_asks_for_one_without_slowing(header: str | None) -> None:
    auth = DaemonAuth("token")
    for _ in range(auth.backoff.free + 2):  # asking is not a wrong try
        refused = _refusal(auth, _connection(authorization=header))
        assert (refused.status, refused.code, str(refused)) == (
            401,
            "token_required",
            NO_CREDENTIAL,
        )


def test_the_bearer_header_wins_over_a_good_cookie() -> None:
    auth = DaemonAuth("token")
    connection = _connection(authorization="Bearer nope", cookie=auth.session)
    assert _refusal(auth, connection).code == "token_required"


def test_a_wrong_credential_is_refused_before_a_wrong_host() -> None:
    auth = DaemonAuth("token")
    refused = _refusal(auth, _connection(authorization="Bearer nope", host="evil.example"))
    assert refused.status == 401
    refused = _refusal(auth, _connection(authorization="Bearer token", host="evil.example"))
    assert (refused.status, refused.code) == (403, "host_not_allowed")
    assert str(refused).startswith("requests for host 'evil.example' are refused: use 127.0.0.1")


# The page's cookie and its CSRF token.


def test_the_csrf_token_is_an_hmac_of_the_session_under_the_daemon_token() -> None:
    auth = DaemonAuth("token", session="session")
    expected = hmac.new(b"token", b"csrf:session", hashlib.sha256).hexdigest()
    assert auth.csrf_token == expected
    assert DaemonAuth("token", session="other").csrf_token != expected


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_the_cookie_alone_passes_a_safe_method(method: str) -> None:
    auth = DaemonAuth("token")
    assert auth.check(_connection(cookie=auth.session), method) == "cookie"


@pytest.mark.parametrize("method", UNSAFE)
def test_the_cookie_with_the_csrf_token_passes_an_unsafe_method(method: str) -> None:
    auth = DaemonAuth("token")
    connection = _connection(cookie=auth.session, csrf=auth.csrf_token)
    assert auth.check(connection, method) == "cookie"


@pytest.mark.parametrize("method", UNSAFE)
def test_an_unsafe_method_without_the_csrf_token_is_refused_without_slowing(method: str) -> None:
    auth = DaemonAuth("token")
    for _ in range(auth.backoff.free + 2):  # a page that forgot the header is not an attacker
        refused = _refusal(auth, _connection(cookie=auth.session), method)
        assert (refused.status, refused.code, str(refused)) == (401, "token_required", NEEDS_CSRF)


@pytest.mark.parametrize("method", UNSAFE)
def test_an_unsafe_method_with_a_wrong_csrf_token_is_refused_and_slowed(method: str) -> None:
    auth = DaemonAuth("token")
    connection = _connection(cookie=auth.session, csrf="0" * 64)
    for _ in range(auth.backoff.free):
        refused = _refusal(auth, connection, method)
        assert (refused.status, refused.code, str(refused)) == (401, "token_required", WRONG_CSRF)
    assert _refusal(auth, connection, method).status == 429


def test_a_wrong_cookie_asks_for_the_token() -> None:
    auth = DaemonAuth("token", session="session")
    for cookie in ("other", ""):
        refused = _refusal(auth, _connection(cookie=cookie))
        assert (refused.status, str(refused)) == (401, NO_CREDENTIAL)


# The one-time sign-in code.


def test_the_page_url_carries_the_code_once() -> None:
    auth = DaemonAuth("token", page_code="code")
    assert auth.page_url("http://127.0.0.1:4318/") == "http://127.0.0.1:4318/auth?code=code"
    assert auth.page_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/auth?code=code"
    auth.redeem(_connection(), "code")
    assert auth.page_code is None and auth.page_url("http://127.0.0.1:4318") is None


def test_a_used_or_wrong_code_is_refused_and_slowed() -> None:
    auth = DaemonAuth("token", page_code="code")
    message = "this sign-in link was already used or is wrong: 'oharness setup' prints a new one"
    with pytest.raises(DaemonApiError) as refused:
        auth.redeem(_connection(), "wrong")
    assert (refused.value.status, refused.value.code, str(refused.value)) == (
        401,
        "token_required",
        message,
    )
    assert auth.page_code == "code"  # a wrong guess does not spend the code
    auth.redeem(_connection(), "code")
    with pytest.raises(DaemonApiError) as used:
        auth.redeem(_connection(), "code")
    assert (used.value.status, str(used.value)) == (401, message)


def test_wrong_tries_are_counted_per_client_address() -> None:
    auth = DaemonAuth("token", page_code="code")
    for _ in range(auth.backoff.free):
        with pytest.raises(DaemonApiError):
            auth.redeem(_connection(client=("10.0.0.1", 5)), "wrong")
    with pytest.raises(DaemonApiError) as other:
        auth.redeem(_connection(client=("10.0.0.2", 5)), "wrong")
    assert other.value.status == 401
    with pytest.raises(DaemonApiError) as slowed:
        auth.redeem(_connection(client=("10.0.0.1", 5)), "wrong")
    assert slowed.value.status == 429


def test_a_connection_without_a_client_address_is_counted_as_one_client() -> None:
    auth = DaemonAuth("token")
    for _ in range(auth.backoff.free):
        assert auth.wrong(_connection(client=None), "m").status == 401
    assert auth.wrong(_connection(client=None), "m").status == 429


# The Origin header (the ports are in test_guards.py).


@pytest.mark.parametrize(
    ("origin", "own"),
    [
        ("https://localhost:4318", True),
        ("HTTP://LOCALHOST:4318", True),
        ("https://localhost", False),  # port 443
        ("ftp://localhost:4318", False),
        ("localhost:4318", False),
    ],
)
def test_only_a_web_origin_of_an_allowed_host_is_the_daemons_own(origin: str, own: bool) -> None:
    assert DaemonAuth("token").own_origin(origin, "localhost:4318") is own


def test_a_foreign_origin_is_refused_with_what_may_call_the_daemon() -> None:
    auth = DaemonAuth("token")
    connection = HTTPConnection(
        {
            "type": "http",
            "headers": [(b"host", b"localhost:4318"), (b"origin", b"http://evil.example")],
            "client": ("127.0.0.1", 5),
        }
    )
    with pytest.raises(DaemonApiError) as refused:
        auth.check_host(connection)
    assert (refused.value.status, refused.value.code) == (403, "origin_not_allowed")
    assert str(refused.value) == (
        "cross-origin requests are refused: only pages the daemon serves itself "
        "(same host and port) may call it from a browser"
    )


def test_https_without_a_port_is_port_443() -> None:
    auth = DaemonAuth("token")
    assert auth.own_origin("https://localhost", "localhost:443")
    assert not auth.own_origin("https://localhost", "localhost:444")


def test_a_request_without_a_host_header_is_refused() -> None:
    connection = HTTPConnection({"type": "http", "headers": [], "client": ("127.0.0.1", 5)})
    with pytest.raises(DaemonApiError) as refused:
        DaemonAuth("token").check_host(connection)
    assert refused.value.status == 403
    assert str(refused.value).startswith("requests for host '' are refused")
