"""Credentials in prose: how far after the credential word a value is looked for (the rest of
the line, or the next line after "is" or ":", 100 characters either way)."""

from __future__ import annotations

import pytest

from oharness.notes.secrets import SecretFinding, find_secrets, redact_secrets

TOKEN = "R8kT2mQ9vLp4Zt7RwY3nB6cD"
MARKER = "[REDACTED]"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"The deploy secret is:\n{TOKEN}", 2),
        (f"The deploy secret is\n{TOKEN}", 2),
        (f"first line\nThe deploy secret is:\n{TOKEN}\nlast line", 3),
        ("The deploy secret is:\n" + " " * 76 + TOKEN, 2),  # ends at the 100th character
    ],
)
def test_a_value_on_the_line_after_is_counts(text: str, line: int) -> None:
    assert find_secrets({"body": text}) == [SecretFinding("secret in text", "body", line)]
    assert redact_secrets(text) == text.replace(TOKEN, MARKER)


@pytest.mark.parametrize(
    "text",
    [
        f"The deploy secret for staging\n{TOKEN}",  # the line goes on: the next is unrelated
        f"The deploy secret is:\n\n{TOKEN}",  # only the next line
        f"The deploy secret is:\nthe one below\n{TOKEN}",
    ],
)
def test_a_value_further_away_does_not(text: str) -> None:
    assert find_secrets({"body": text}) == []


def test_the_next_line_is_read_up_to_100_characters() -> None:
    text = "The deploy secret is:\n" + " " * 77 + TOKEN  # one character past the window
    assert redact_secrets(text).endswith(MARKER + TOKEN[-1])


@pytest.mark.parametrize(
    ("text", "line", "redacted"),
    [
        ("Bob's VPN password is hunter2hunter2!", 1, f"Bob's VPN password is {MARKER}!"),
        ("Bob's VPN password is:\nhunter2hunter2!", 2, f"Bob's VPN password is:\n{MARKER}!"),
    ],
)
def test_a_password_in_a_sentence(text: str, line: int, redacted: str) -> None:
    assert find_secrets({"body": text}) == [SecretFinding("password in text", "body", line)]
    assert redact_secrets(text) == redacted


R16 = "R8kT2mQ9vLp4Zt7R"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # A value after a credential word that is no password word: random, 16 or more.
        (f"The deploy secret is:\n{R16}", f"The deploy secret is:\n{MARKER}"),
        (f"The deploy secret is:\n/{R16}", f"The deploy secret is:\n{MARKER}"),  # base64 "/"
        (f"The deploy secret is:\n+{R16}", f"The deploy secret is:\n{MARKER}"),
        # A password: random, or letters and digits made up by hand, quoted or not.
        ("Bob's VPN password is hunter2", f"Bob's VPN password is {MARKER}"),
        ("Bob's VPN password is Summer2024!", f"Bob's VPN password is {MARKER}!"),
        ('Bob\'s VPN password is "hunter2hunter2"', f'Bob\'s VPN password is "{MARKER}"'),
        (
            "Bob's VPN password, we said, was hunter2hunter2",
            f"Bob's VPN password, we said, was {MARKER}",
        ),
        (
            "Log in to the admin console as root with hunter2hunter2!",
            f"Log in to the admin console as root with {MARKER}",
        ),
        (
            "Log in to the admin console as root with hunter22",
            f"Log in to the admin console as root with {MARKER}",
        ),
    ],
)
def test_values_in_prose_that_are_credentials(text: str, redacted: str) -> None:
    assert [finding.kind for finding in find_secrets({"body": text})] in (
        ["secret in text"],
        ["password in text"],
    )
    assert redact_secrets(text) == redacted


@pytest.mark.parametrize(
    "text",
    [
        f"The deploy secret is:\n{R16[:15]}",  # 15 characters
        "The deploy secret is:\nhttps://R8kT2mQ9vLp4Zt7RwY3n",  # a URL
        "The deploy secret is:\nRkTmQvLpZtRwYnBcDxFh",  # no digit
        "The deploy secret is:\nbuild-3fa85f6412345678abcdef",  # an id around a digest
        "Bob's VPN password is bob@example-corp.io",  # an e-mail address
        "Bob's VPN password is hunt2",  # five characters
        "Bob's VPN password is (hunter2hunter2)",  # code
        "Bob's VPN password is https://hunter2hunter2.io",
        "The password was changed; hunter2hunter2 is the user",  # another sentence
        "Log in to the admin console as root with hunt2!",  # too short
        "Log in to the admin console as root with pass",
    ],
)
def test_values_in_prose_that_are_not(text: str) -> None:
    assert find_secrets({"body": text}) == []


AWS_SECRET = "9dF3kLm2Qx7Rt/Vb8Nw+Yp4Zs1Hc6Ju0Ge5Ai3Ko"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (f"The AWS secret for CI:\n{AWS_SECRET}", True),
        (f"aws creds {AWS_SECRET} x", True),
        (f"secret for CI:\n{AWS_SECRET}", False),  # no mention of AWS
        (f"aws creds {AWS_SECRET[:39]} x", False),  # 39 characters
        (f"aws creds {AWS_SECRET}A x", False),  # 41
        (f"aws creds {AWS_SECRET.lower()} x", False),  # one case only
        (f"aws creds {AWS_SECRET.upper()} x", False),
        ("aws creds dFkLmQxRt/VbNw+YpZsHcJuGeAiKoABCDEF x", False),  # no digit
        ("aws data dGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVy x", False),  # base64 of text
    ],
)
def test_a_bare_aws_secret_key_is_forty_mixed_characters_near_aws(text: str, found: bool) -> None:
    kinds = [finding.kind for finding in find_secrets({"body": text})]
    assert ("AWS secret access key" in kinds) is found
