"""Credentials in prose: how far after the credential word a value is looked for (the rest of
the line, or the next line after "is" or ":", 100 characters either way)."""

from __future__ import annotations

import base64

import pytest

from oharness.notes.secrets import SecretFinding, find_secrets, redact_secrets
from oharness.notes.secrets.prose import _is_password_value, _is_private_key_der

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


@pytest.mark.parametrize(
    ("value", "made_up", "found"),
    [
        ("hunter2hunter2", True, True),  # made up by hand, right after "is"
        ("hunter2hunter2", False, False),  # ... elsewhere it must look random
        ("Xk9#mQ2v", False, True),  # random from 8 characters
        ("Xk9#mQ2v!", False, True),  # a closing "!" belongs to the sentence
        ("Xk9#mQ2!", False, False),  # ... so this is 7 characters
        ("Xk9%mQ2vLp", True, True),  # a "%" alone is a character of the password
        ("Xk9%2FmQ2vLp", True, False),  # a percent escape is a piece of a URL
        ("Xk9#mQ2v://Lp7", True, False),  # a URL
        ("bob2k9x@corp.io", True, False),  # an e-mail address
        ("3fa85f64abcdef12", True, False),  # a hex id, though letters and digits
        ("3fa85f64abcdef12!", True, False),
        ("8302917465", True, False),  # digits alone read as an id
        ("8302917465!", True, False),
    ],
)
def test_a_value_after_a_password_word(value: str, made_up: bool, found: bool) -> None:
    assert _is_password_value(value, made_up) is found


def test_a_value_after_a_password_word_may_be_made_up_by_default() -> None:
    assert _is_password_value("hunter2hunter2")


def _base64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


DER_TAIL = bytes(range(40, 80))


@pytest.mark.parametrize(
    ("head", "private"),
    [
        (b"\x30\x82\x04\xbe\x02\x01\x00" + DER_TAIL, True),  # PKCS#8: long length, version 0
        (b"\x30\x77\x02\x01\x01" + DER_TAIL, True),  # SEC 1 EC key: short length, version 1
        (b"\x30\x76\x02\x01\x00" + DER_TAIL, True),
        (b"\x30\x77\x02\x01\x02" + DER_TAIL, False),  # version 2: no private key
        (b"\x30\x82\x03\x00\x30\x82\x02\x01\x00" + DER_TAIL, False),  # a certificate
        (b"\x31\x82\x04\xbe\x02\x01\x00" + DER_TAIL, False),  # a SET, not a SEQUENCE
        (b"\x30\x06\x02\x01\x00\x01\x02\x03", True),  # eight bytes are enough to judge
        (b"\x30\x05\x02\x01\x00\x01\x02", False),  # seven are not
    ],
)
def test_a_der_private_key_starts_with_a_sequence_then_version_0_or_1(
    head: bytes, private: bool
) -> None:
    assert _is_private_key_der(_base64(head)) is private


def test_a_head_that_is_no_base64_is_no_key() -> None:
    head = _base64(b"\x30\x82\x04\xbe\x02\x01\x00" + DER_TAIL)
    assert _is_private_key_der(head[:31]) is False  # cut inside a quad


def test_a_key_body_without_begin_or_end_line_is_a_private_key_block() -> None:
    body = _base64(b"\x30\x77\x02\x01\x01" + bytes(range(100, 200)))
    text = f"pasted: {body} end"
    assert find_secrets({"body": text}) == [SecretFinding("private key block", "body", 1)]
    assert redact_secrets(text) == f"pasted: {MARKER} end"


def test_a_service_account_key_is_named_for_google() -> None:
    text = '{"type": "service_account", "private_key_id": "3f9c2a7b1e5d4c8a9b0f"}'
    assert find_secrets({"body": text}) == [SecretFinding("Google service-account key", "body", 1)]


@pytest.mark.parametrize(
    "text",
    [
        "login: admin / pw: Tr0ub4dor&3",
        "VPN pw: Sommer2024!",
        "Das Passwort für den Staging-Server lautet Sommer2024!",
        "Das Kennwort ist Winter2025#",
        "Le mot de passe du wifi est Soleil2023!",
        "La contraseña de la base es Verano2024!",
        "A senha do admin é Brasil2024!",
        "La password del server è Estate2024!",
        "Het wachtwoord is Zomer2024!",
        "PASSWORT=Sommer2024xyz!",
        "DB_PW=Tr0ub4dor&3x",
        "数据库密码是 q8Zk3vN1pLw7Rt2Yx9Bm",
        "管理员密码：Sommer2024!",
        "Пароль от базы: q8Zk3vN1pLw7Rt2Yx9Bm",
        "パスワードは Zx9kLm2Qp77 です",
        "비밀번호는 Zx9kLm2Qp77 입니다",
        "Hasło to Zx9kLm2Qp77",
        "Şifre: Zx9kLm2Qp77",
        "Lösenordet är Zx9kLm2Qp77",
        "Passordet er Sommer2024!",
        "كلمة المرور للخادم هي Zq8vN2kLp4!",
        "सर्वर का पासवर्ड Zq8vN2kLp4! है",
        'wachtwoord = "Zomer2024!!"',
    ],
)
def test_a_password_after_pw_or_in_another_language(text: str) -> None:
    assert [finding.kind for finding in find_secrets({"body": text})] in (
        ["password in text"],
        ["password assignment"],
    )


@pytest.mark.parametrize(
    "text",
    [
        "the password is in 1Password",  # where it lives, as the refusal asks a note to say
        "The staging admin password is in 1Password, vault 'platform'.",
        "the pw is in 1Password (shared vault)",
        "Le mot de passe est stocké dans 1Password",
        "Het wachtwoord is te vinden in 1Password",
        "the password is in KeePassXC",
        "Das Passwort muss mindestens 12 Zeichen haben",
        "A senha é trocada a cada 90 dias",
        "La password e l'utente sono in 1Password",
        "pw policy: 12 chars min, rotated every 90 days (PW_MIN_LENGTH=12)",
        "PWA manifest v2 served from /static",
        "password hashing uses argon2id",
        "passwords are hashed with bcrypt, keys derived with pbkdf2-sha256",
        "密码保存在1Password中",
        "密码哈希使用 argon2id",
        "パスワードは1Passwordに保存",
        "Пароль хранится в менеджере паролей, не в заметках",
        "비밀번호 정책: 12자 이상",
        "Lösenordet finns i 1Password",
        "كلمة المرور محفوظة في 1Password",
        "पासवर्ड नीति: कम से कम 12 अक्षर",
        '"integrity": "sha512-pW/bRdCagRyzVzYecbS9kRj+47Dr/n0ccNfbwEDX0Ni5wCH2P+nPQznEoxej+LSN",',
    ],
)
def test_where_a_password_lives_and_words_about_passwords_are_kept(text: str) -> None:
    assert find_secrets({"body": text}) == []


@pytest.mark.parametrize(
    ("summary", "body", "kind"),
    [
        ("The VPN password is", "Zq8vN2kLp4!xY", "password in text"),
        ("VPN password:", "Zq8vN2kLp4!xY", "password in text"),
        ("Staging token", "9fK2xQ7mZp4LvN8rT3wB6yH1", "secret in text"),
    ],
)
def test_a_credential_split_between_summary_and_body_is_found(
    summary: str, body: str, kind: str
) -> None:
    assert find_secrets({"summary": summary, "body": body}) == [SecretFinding(kind, "body", 1)]


@pytest.mark.parametrize(
    "text",
    [
        "where-the-admin-password-is-kept-d60",  # an id made from a summary
        "- Where the admin password is kept (where-the-admin-password-is-kept-d60)",
        '<note id="reset-flow-when-a-user-password-is-forgotten-a1b">',
        # A note's id in the index line, after a credential word of its summary.
        "- AWS creds for deploy (aws-creds-for-deploy-5f0)",
        "- Rotate the token (api-token-rotation-5f0)",
    ],
)
def test_a_slug_holding_a_credential_word_is_no_credential(text: str) -> None:
    assert find_secrets({"body": text}) == []
    assert (
        find_secrets({"summary": "Where the admin password is kept", "body": "In 1Password."}) == []
    )


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Jenkins login: admin / S3cure!Pass2024", "S3cure!Pass2024"),
        ("login with bob@acme.io / hunter2hunter2", "hunter2hunter2"),
        ("staging creds: deploy / k8Gh2qLm7x", "k8Gh2qLm7x"),
        ("Zugangsdaten Testserver: deploy / Wq8zL3xq7!", "Wq8zL3xq7!"),
        ("identifiants du NAS : backup / Wq8zL3xq7!", "Wq8zL3xq7!"),
        ("Mongo admin: admin:Pa55w0rd!2024", "Pa55w0rd!2024"),
        ("rabbitmq: guest/Xk9mQ2vLp4", "Xk9mQ2vLp4"),
        ("Elastic: elastic / Xk9mQ2vLp4Tz", "Xk9mQ2vLp4Tz"),
        ("mysql -h db -u root -pS3cr3tPass! shop", "S3cr3tPass!"),
        ("sshpass -p 'Xk9mQ2vL!' ssh deploy@bastion", "Xk9mQ2vL!"),
        ("docker login -u bot -p Xk9mQ2vLp4 registry.acme.io", "Xk9mQ2vLp4"),
        ("redis-cli -a Xk9mQ2vL!p4 -h cache.internal", "Xk9mQ2vL!p4"),
        ("curl -u admin:Xk9mQ2vL! https://jenkins.acme.io/api/json", "Xk9mQ2vL!"),
        ("./manage.py createsuperuser --password Xk9mQ2vLp4", "Xk9mQ2vLp4"),
    ],
)
def test_a_user_and_password_pair_or_a_command_line_password(text: str, secret: str) -> None:
    assert find_secrets({"body": text})
    assert secret not in redact_secrets(text)


@pytest.mark.parametrize(
    "text",
    [
        "FROM ubuntu:jammy-20240405",
        "image: postgres:16.2-alpine",
        "chown root:root /etc/hosts",
        "grant admin:read and admin:write scopes to the bot",
        "sign in with Google / GitHub2 / email",
        "the login page lives at admin/Login2 and /admin/settings",
        "User accounts: see users/Jd83kLm2 for the sample user",
        "login flow: oauth2/Authorize then token/Refresh1",
        "Account switch: Personal / Work2024 profile",
        "log in as admin / the password is in the team vault",
        "root:x:0:0:root:/root:/bin/bash",
        "ssh -p 2222 deploy@bastion",
        "mysql -u root -p shop",
        'docker login -u bot -p "$REGISTRY_TOKEN" registry.acme.io',
        'curl -u "$USER:$TOKEN" https://api.acme.io',
        "mysql -u root -p shop   # asks for the password\ncache key: v2-deps-85a6f7b9a9b5",
    ],
)
def test_pairs_and_commands_without_a_password_are_kept(text: str) -> None:
    assert find_secrets({"body": text}) == []


def test_a_password_label_alone_on_its_line_takes_the_next_line() -> None:
    assert find_secrets({"body": "Username\nadmin\nPassword\nXk9mQ2vLp4!"})


@pytest.mark.parametrize(
    "text",
    [
        "API key: Xk9mQ2vLp4Tz7RwY3nB6cD",
        "Key: Xk9mQ2vLp4Tz7RwY3nB6cD",
        "access key: Xk9mQ2vLp4Tz7RwY3nB6cD",
        "signing key = Xk9mQ2vLp4Tz7RwY3nB6cD",
        "HMAC key: 5f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "The Datadog API key is 4f9a0c2e71b04d5f9a6c3e8b2d1f7a4e",
        "webhook secret -> 8f7d6e5c4b3a29180716253443526170",
    ],
)
def test_a_key_named_in_two_words_or_stated_in_hex_is_a_secret(text: str) -> None:
    assert find_secrets({"body": text}) == [SecretFinding("secret in text", "body", 1)]


@pytest.mark.parametrize(
    "text",
    [
        "cache key: 4f9a0c2e71b04d5f9a6c3e8b2d1f7a4e",
        'char *key = "__f2py_cb_#name#";',  # code: the assignment rule judges "key ="
        "key: user:1234:session:profile",
        "the commit is 4f9a0c2e71b04d5f9a6c3e8b2d1f7a4e9c1d2e3f",
        "rotated the API key in 4f9a0c2e71b04d5f9a6c3e8b2d1f7a4e9c1d2e3f",
        "secret key fingerprint: 4f9a0c2e71b04d5f9a6c3e8b2d1f7a4e9c1d2e3f",
        "token hash: 4f9a0c2e71b04d5f9a6c3e8b2d1f7a4e",
        "API key: see the vault entry payments/stripe-live",
        "private key: ~/.ssh/id_ed25519",
    ],
)
def test_hex_after_a_plain_key_or_not_stated_is_no_secret(text: str) -> None:
    assert find_secrets({"body": text}) == []


@pytest.mark.parametrize(
    "text",
    [
        "wifi: AcmeGuest, password Summer2024!",
        "New hire onboarding: initial password Summer2024!, must change on first login",
        "Passwd for the jump host - Summer2024!",
        "Ana's GitHub PAT Xk9mQ2vLp4Tz7RwY3nB6cD",
        "license key: Xk9mQ2vLp4Tz7RwY3nB6cD",
    ],
)
def test_a_password_right_after_its_word_and_other_named_keys(text: str) -> None:
    assert find_secrets({"body": text})


@pytest.mark.parametrize(
    "text",
    [
        "the password Policy2 page explains the rules",  # a word, then a sentence
        "password-less login - Okta2024 rollout",
        "tests pass Summer2024 build",
        "the path Xk9mQ2vLp4Tz7RwY3nB6cD/data",
    ],
)
def test_words_near_a_password_word_that_are_no_password(text: str) -> None:
    assert find_secrets({"body": text}) == []


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Use Xk9mQ2vLp4Tz7RwY3nB6cD as the API token for staging", "Xk9mQ2vLp4Tz7RwY3nB6cD"),
        ("(Xk9!mQ2vLp4) is the staging db password", "Xk9!mQ2vLp4"),
    ],
)
def test_a_value_named_right_after_it(text: str, secret: str) -> None:
    assert find_secrets({"body": text})
    assert redact_secrets(text) == text.replace(secret, MARKER)


@pytest.mark.parametrize(
    "text",
    [
        "use getUserToken as the token provider",
        "the value 3f786850e387550fdab836ed7e6dc881de23001b is the commit, not a token",
        "use sha256 as the password hash",
        "keep 1Password as the password manager",
        "treat X-Request-Id as the correlation token",
    ],
)
def test_a_name_or_digest_before_a_credential_word_is_kept(text: str) -> None:
    assert find_secrets({"body": text}) == []


def test_a_uuid_stated_as_a_named_key_is_a_secret_and_an_id_is_not() -> None:
    uuid = "3f2a9c1e-7b4d-4e8a-9c2f-1d5e6b7a8c9d"
    assert find_secrets({"body": f"The Heroku API key is {uuid}"})
    assert find_secrets({"body": f"the idempotency key is {uuid}"}) == []
    assert find_secrets({"body": f"request id is {uuid}"}) == []


def test_the_private_lines_of_a_putty_key_file_are_a_private_key() -> None:
    text = (
        "PuTTY-User-Key-File-3: ssh-rsa\nPublic-Lines: 1\nAAAAB3NzaC1yc2E\n"
        "Private-Lines: 2\nAAAAgQCXk9mQ2vLp4Tz7RwY3nB6cD\nxF1hJ5sA0gUe7Mw4p==\nPrivate-MAC: 3f2a"
    )
    assert find_secrets({"body": text}) == [SecretFinding("private key block", "body", 4)]
    assert redact_secrets(text).endswith("AAAAB3NzaC1yc2E\n[REDACTED]\nPrivate-MAC: 3f2a")
