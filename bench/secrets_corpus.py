"""The labelled corpus of the credential check (imported by bare name, like ``_support``).

:func:`secret_notes` writes credentials the way people paste them into notes: every provider
format the check knows, passwords and keys in prose, and every hiding trick seen in attacks
(base64, HTML entities, percent-encoding, lookalike letters, combining marks, reversal, a key
body without its BEGIN line, a service-account JSON). :func:`ordinary_notes` writes developer
notes with no credential in them but with everything that resembles one: commit ids, sha256
digests, UUIDs, ULIDs, trace ids, base64 images and lock-file integrity hashes, URLs with
percent-encoding, long identifiers, code that reads credentials from the environment, and
prose about passwords, tokens and keys. Both are generated from a seed, so a run is
repeatable and another seed is another draw.
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from collections.abc import Callable

BASE62 = string.ascii_letters + string.digits
B64 = BASE62 + "+/"
URLSAFE = BASE62 + "-_"
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
PASSWORD = BASE62 + "!@#$%^&*-_=+.?~"

Draw = Callable[[random.Random], str]


def draw(rng: random.Random, alphabet: str, length: int) -> str:
    """``length`` characters drawn from ``alphabet``."""
    return "".join(rng.choice(alphabet) for _ in range(length))


def _mixed(rng: random.Random, alphabet: str, length: int) -> str:
    """A value holding an upper-case letter, a lower-case letter and a digit."""
    while True:
        value = draw(rng, alphabet, length)
        if (
            any(c.isupper() for c in value)
            and any(c.islower() for c in value)
            and any(c.isdigit() for c in value)
        ):
            return value


# --- provider tokens ------------------------------------------------------------------------------


def aws_id(rng: random.Random) -> str:
    return rng.choice(("AKIA", "ASIA")) + draw(rng, UPPER_DIGITS, 16)


def aws_secret(rng: random.Random) -> str:
    return _mixed(rng, B64, 40)


def github(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return "github_pat_" + draw(rng, BASE62, 22) + "_" + draw(rng, BASE62, 59)
    return rng.choice(("ghp_", "gho_", "ghs_", "ghu_")) + _mixed(rng, BASE62, 36)


def gitlab(rng: random.Random) -> str:
    return "glpat-" + _mixed(rng, URLSAFE, 20)


def slack_token(rng: random.Random) -> str:
    return (
        f"xox{rng.choice('bpa')}-{rng.randrange(10**10, 10**12)}-{rng.randrange(10**10, 10**12)}"
        f"-{_mixed(rng, BASE62, 24)}"
    )


def slack_webhook(rng: random.Random) -> str:
    team, channel = "T" + draw(rng, UPPER_DIGITS, 8), "B" + draw(rng, UPPER_DIGITS, 10)
    return f"https://hooks.slack.com/services/{team}/{channel}/{_mixed(rng, BASE62, 24)}"


def stripe(rng: random.Random) -> str:
    return rng.choice(("sk_live_", "rk_live_", "sk_test_")) + _mixed(rng, BASE62, 24)


def openai(rng: random.Random) -> str:
    return rng.choice(("sk-proj-", "sk-", "sk-svcacct-")) + _mixed(rng, URLSAFE, 48)


def anthropic(rng: random.Random) -> str:
    return "sk-ant-api03-" + _mixed(rng, URLSAFE, 93) + "AA"


def google(rng: random.Random) -> str:
    return "AIza" + _mixed(rng, URLSAFE, 35)


def jwt(rng: random.Random) -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = json.dumps({"sub": str(rng.randrange(10**6)), "iat": rng.randrange(10**9, 2 * 10**9)})
    body = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
    return f"{header}.{body}.{draw(rng, URLSAFE, 43)}"


def npm(rng: random.Random) -> str:
    return "npm_" + _mixed(rng, BASE62, 36)


def pypi(rng: random.Random) -> str:
    return "pypi-AgEIcHlwaS5vcmc" + _mixed(rng, URLSAFE, 60)


def _pem_body(rng: random.Random, header: bytes) -> list[str]:
    raw = header + bytes(rng.randrange(256) for _ in range(rng.randrange(180, 400)))
    text = base64.b64encode(raw).decode()
    return [text[i : i + 64] for i in range(0, len(text), 64)]


# DER starts of private keys: PKCS#8 RSA, PKCS#1 RSA, SEC 1 EC, PKCS#8 Ed25519.
_DER_HEADERS = (
    bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7"),
    bytes.fromhex("308204a40201000282010100"),
    bytes.fromhex("30770201010420"),
    bytes.fromhex("302e020100300506032b657004220420"),
)


def private_key(rng: random.Random) -> str:
    kind = rng.choice(("", "RSA ", "EC ", "OPENSSH "))
    header = b"openssh-key-v1\x00" if kind == "OPENSSH " else rng.choice(_DER_HEADERS)
    lines = _pem_body(rng, header)
    return (
        f"-----BEGIN {kind}PRIVATE KEY-----\n"
        + "\n".join(lines)
        + f"\n-----END {kind}PRIVATE KEY-----"
    )


def db_url(rng: random.Random) -> str:
    scheme = rng.choice(("postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp"))
    user = rng.choice(("app", "admin", "shop", "etl", "root", "billing_rw"))
    host = rng.choice(("db.internal", "10.0.3.17", "pg-prod.acme.io", "cluster0.x7kq2.mongodb.net"))
    return f"{scheme}://{user}:{_mixed(rng, BASE62 + '-_', rng.randrange(12, 28))}@{host}/main"


PROVIDERS: dict[str, Draw] = {
    "AWS access key id": aws_id,
    "GitHub token": github,
    "GitLab token": gitlab,
    "Slack token": slack_token,
    "Slack webhook": slack_webhook,
    "Stripe key": stripe,
    "OpenAI key": openai,
    "Anthropic key": anthropic,
    "Google API key": google,
    "JWT": jwt,
    "npm token": npm,
    "PyPI token": pypi,
    "private key": private_key,
    "database URL": db_url,
}

# Further providers, the formats of gitleaks' rules of the same name.
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()
PROVIDERS.update(
    {
        "Slack app token": lambda r: (
            f"xapp-1-A{draw(r, UPPER_DIGITS, 10)}-{r.randrange(10**12, 10**13)}-{draw(r, HEX, 64)}"
        ),
        "Twilio API key": lambda r: "SK" + _mixed(r, HEX + "ABCDEF", 32),
        "Mailgun key": lambda r: "key-" + draw(r, HEX, 32),
        "Mailchimp key": lambda r: draw(r, HEX, 32) + f"-us{r.randrange(1, 21)}",
        "Square token": lambda r: "EAAA" + _mixed(r, URLSAFE, 60),
        "Telegram bot token": lambda r: f"{r.randrange(10**8, 10**10)}:AA{_mixed(r, URLSAFE, 33)}",
        "Azure storage key": lambda r: (
            "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey="
            + base64.b64encode(r.randbytes(64)).decode()
            + ";EndpointSuffix=core.windows.net"
        ),
        "Azure AD client secret": lambda r: (
            f"{_mixed(r, BASE62, 3)}{r.randrange(10)}Q~{_mixed(r, BASE62 + '_~.-', 34)}"
        ),
        "Databricks token": lambda r: "dapi" + draw(r, HEX, 32),
        "Groq key": lambda r: "gsk_" + _mixed(r, BASE62, 52),
        "Grafana token": lambda r: f"glsa_{_mixed(r, BASE62, 32)}_{draw(r, HEX, 8)}",
        "Docker Hub token": lambda r: "dckr_pat_" + _mixed(r, URLSAFE, 27),
        "Linear key": lambda r: "lin_api_" + _mixed(r, BASE62, 40),
        "Notion token": lambda r: f"ntn_{draw(r, string.digits, 11)}{_mixed(r, BASE62, 35)}",
        "Doppler token": lambda r: "dp.st." + _mixed(r, BASE62, 43),
        "Atlassian token": lambda r: "ATATT3xFfGF0" + _mixed(r, URLSAFE, 180),
        "Postman key": lambda r: f"PMAK-{draw(r, HEX, 24)}-{draw(r, HEX, 34)}",
        "New Relic key": lambda r: "NRAK-" + draw(r, UPPER_DIGITS, 27),
        "Sentry token": lambda r: "sntryu_" + draw(r, HEX, 64),
        "Vault token": lambda r: "hvs." + _mixed(r, BASE62, 24),
        "Terraform Cloud token": lambda r: f"{draw(r, HEX, 14)}.atlasv1.{_mixed(r, BASE62, 67)}",
        "age secret key": lambda r: "AGE-SECRET-KEY-1" + draw(r, _BECH32, 58),
        "DigitalOcean token": lambda r: "dop_v1_" + draw(r, HEX, 64),
        "admin key assignment": lambda r: f"ALGOLIA_ADMIN_KEY={draw(r, HEX, 32)}",
    }
)

_PROVIDER_LINES = (
    "{v}",
    "Use this for the deploy job: {v}",
    "export TOKEN={v}",
    "CI secret (rotated 2024-03-02): {v}",
    "- staging credential `{v}` (ask Ana before rotating)",
    '{{"name": "deploy", "value": "{v}"}}',
    "The bot authenticates with {v} until the migration is done.",
    "curl -H 'Authorization: token {v}' https://api.acme.io/v2/builds",
    "Found in the old .env:\n\n```\n{v}\n```",
)


# --- passwords and keys in prose ------------------------------------------------------------------


def made_up_password(rng: random.Random) -> str:
    words = (
        "hunter",
        "correcthorse",
        "batterystaple",
        "sunshine",
        "dragon",
        "monkey",
        "tiger",
        "winter",
        "summer",
        "letmein",
        "trustno",
        "shadow",
        "maple",
        "falcon",
        "orange",
    )
    word = "".join(rng.sample(words, rng.choice((1, 2))))
    if rng.random() < 0.5:
        word = word.capitalize()
    digits = str(rng.randrange(1, 10 ** rng.randrange(1, 5)))
    shape = rng.randrange(4)
    if shape == 0:
        return f"{word}{digits}"
    if shape == 1:
        return f"{word}{digits}{rng.choice('!?#$*')}"
    if shape == 2:
        return f"{word}{digits}{word}{digits}{rng.choice(('', '!'))}"
    return draw(rng, PASSWORD, rng.randrange(10, 20))


_PEOPLE = ("Bob", "Priya", "Ana", "the admin", "Jonas", "the release bot", "Wei")
_SYSTEMS = (
    "staging admin",
    "Grafana",
    "the VPN",
    "the NAS",
    "Jenkins",
    "the router",
    "pgAdmin",
    "the shared Gmail",
    "Kibana",
    "the build box",
)


def _prose_password(rng: random.Random, value: str) -> str:
    person, system = rng.choice(_PEOPLE), rng.choice(_SYSTEMS)
    return rng.choice(
        (
            f"{person}'s password is {value}",
            f"Log in to {system} as root with {value}",
            f"log into {system} with {value} (temporary, change it)",
            f"The password for {system} is {value} until Friday.",
            f"sign in to {system} using {value}",
            f"{system}: the admin password is now {value}",
            f"Reminder: {person} set the {system} password to {value}",
            f"Passphrase for the backup disk: {value}",
            f"password for {system} = {value}",
        )
    )


def _pair_or_command(rng: random.Random) -> str:
    """A user and password written as a pair, or a password on a command line."""
    value, system = made_up_password(rng), rng.choice(_SYSTEMS)
    user = rng.choice(("admin", "root", "guest", "deploy", "ana@acme.io", "ci-bot"))
    return rng.choice(
        (
            f"{system} login: {user} / {value}",
            f"credentials for {system}: {user} / {value}",
            f"{system}: admin:{_mixed(rng, BASE62, 14)}",
            f"mysql -h db.internal -u {user} -p{value} shop",
            f"sshpass -p '{value}' ssh {user}@bastion.acme.io",
            f"docker login -u {user} -p {value} registry.acme.io",
            f"redis-cli -h cache.internal -a {value}",
            f"curl -u {user}:{value} https://jenkins.acme.io/api/json",
            f"./manage.py createsuperuser --password {value}",
        )
    )


def _foreign(rng: random.Random) -> str:
    return _foreign_password(rng, made_up_password(rng))


def _foreign_password(rng: random.Random, value: str) -> str:
    """A password in prose in another language than English, or after "pw"."""
    system = rng.choice(_SYSTEMS)
    return rng.choice(
        (
            f"Das Passwort für {system} lautet {value}",
            f"Kennwort ({system}): {value}",
            f"Le mot de passe de {system} est {value}",
            f"La contraseña de {system} es {value}",
            f"A senha do {system} é {value}",
            f"La password di {system} è {value}",
            f"Het wachtwoord van {system} is {value}",
            f"{system} login: admin / pw: {value}",
            f"{system} 的密码是 {value}",
            f"{system} のパスワードは {value} です",
            f"{system} 비밀번호는 {value} 입니다",
            f"Пароль от {system}: {value}",
            f"Hasło do {system} to {value}",
        )
    )


def _prose_secret(rng: random.Random, value: str) -> str:
    system = rng.choice(("CI", "the deploy job", "prod", "the nightly export", "Terraform"))
    return rng.choice(
        (
            f"The AWS secret for {system} is {value}",
            f"AWS secret key for {system}: {value}",
            f"aws creds for {system} -> {value}",
            f"Secret access key ({system}) {value}",
            f"The secret we gave {system} is {value}, rotate it next quarter.",
        )
    )


def _aws_pair(rng: random.Random) -> str:
    key_id, secret = aws_id(rng), aws_secret(rng)
    return rng.choice(
        (
            f"{key_id} {secret}",
            f"key id {key_id}\nsecret {secret}",
            f"Access key {key_id}, and the other half is {secret}",
            f"{key_id}\n{secret}",
            f"id={key_id} / {secret}",
        )
    )


# --- hiding tricks --------------------------------------------------------------------------------

_CYRILLIC = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "i": "і"}


def _lookalike(rng: random.Random, token: str) -> str:
    chars = list(token)
    places = [i for i, c in enumerate(chars) if c in _CYRILLIC]
    for i in rng.sample(places, min(len(places), rng.randrange(1, 4))):
        chars[i] = _CYRILLIC[chars[i]]
    return "".join(chars)


def _hidden(rng: random.Random) -> tuple[str, str]:
    token = rng.choice((github, gitlab, openai, stripe, npm, slack_token))(rng)
    trick = rng.randrange(9)
    if trick == 0:
        return "base64", f"token (base64): {base64.b64encode(token.encode()).decode()}"
    if trick == 1:
        payload = json.dumps({"auth": token, "user": "ci"}).encode()
        return "base64", f"config blob {base64.b64encode(payload).decode()}"
    if trick == 2:
        return "HTML entities", "".join(f"&#{ord(c)};" for c in token)
    if trick == 3:
        return "HTML entities", "key: " + "".join(f"&#x{ord(c):x};" for c in token)
    if trick == 4:
        return "URL-encoded", "".join(f"%{ord(c):02X}" for c in token)
    if trick == 5:
        return "lookalike letters", f"token {_lookalike(rng, token)}"
    if trick == 6:
        mark = rng.choice(("\u0336", "\u0335", "\u0338", "\u0301", "\u20d2"))
        return "combining marks", "".join(c + mark for c in token)
    if trick == 7:
        return "reversed", f"backwards, so it is not scanned: {token[::-1]}"
    return "escapes", "".join(f"\\u{ord(c):04x}" for c in token)


def _key_body(rng: random.Random) -> str:
    header = b"openssh-key-v1\x00" if rng.random() < 0.2 else rng.choice(_DER_HEADERS)
    lines = _pem_body(rng, header)
    tail = "\n-----END PRIVATE KEY-----" if rng.random() < 0.5 else ""
    return "the key (pasted without its first line):\n" + "\n".join(lines) + tail


def _service_account(rng: random.Random) -> str:
    project = rng.choice(("shop-prod", "etl-412", "acme-ml"))
    key = (
        private_key(rng).replace("\n", "\\n")
        if rng.random() < 0.5
        else "-----BEGIN PRIVATE KEY-----\\nMIIEv..."
    )
    data = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": draw(rng, HEX, 40),
        "private_key": key,
        "client_email": f"ci@{project}.iam.gserviceaccount.com",
        "client_id": str(rng.randrange(10**20, 10**21)),
    }
    return json.dumps(data, indent=rng.choice((None, 2)))


def secret_notes(seed: int, per_form: int = 60) -> list[tuple[str, str]]:
    """``(form, note text)`` pairs, each note holding one credential or more."""
    rng = random.Random(seed)
    notes: list[tuple[str, str]] = []
    for _ in range(per_form):
        for form, make in PROVIDERS.items():
            notes.append((form, rng.choice(_PROVIDER_LINES).format(v=make(rng))))
        notes.append(("password in prose", _prose_password(rng, made_up_password(rng))))
        notes.append(("password in prose", _prose_password(rng, made_up_password(rng))))
        notes.append(("AWS secret in prose", _prose_secret(rng, aws_secret(rng))))
        notes.append(("password in prose, other languages", _foreign(rng)))
        notes.append(("user and password pair, command line", _pair_or_command(rng)))
        notes.append(("AWS key id and secret", _aws_pair(rng)))
        notes.append(("key body without BEGIN", _key_body(rng)))
        notes.append(("service-account JSON", _service_account(rng)))
        for _ in range(3):
            notes.append(_hidden(rng))
        notes.append(("Slack webhook", slack_webhook(rng).removeprefix("https://")))
    return [(form, _surround(rng, text)) for form, text in notes]


def _surround(rng: random.Random, text: str) -> str:
    """The credential inside a note: some ordinary lines before and after, sometimes none."""
    before = [_ordinary_line(rng) for _ in range(rng.randrange(0, 3))]
    after = [_ordinary_line(rng) for _ in range(rng.randrange(0, 3))]
    return "\n".join([*before, text, *after])


# --- ordinary notes -------------------------------------------------------------------------------

_SERVICES = ("billing", "mailer", "search", "auth", "shop-api", "ingest", "gateway", "reports")


def _uuid(rng: random.Random) -> str:
    h = draw(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _ulid(rng: random.Random) -> str:
    return "01" + draw(rng, "0123456789ABCDEFGHJKMNPQRSTVWXYZ", 24)


def _png(rng: random.Random) -> str:
    raw = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(
        rng.randrange(256) for _ in range(rng.randrange(60, 600))
    )
    return base64.b64encode(raw).decode()


def _integrity(rng: random.Random) -> str:
    return "sha512-" + base64.b64encode(bytes(rng.randrange(256) for _ in range(64))).decode()


_IDENTIFIERS = (
    "AbstractSingletonProxyFactoryBean",
    "test_remember_refuses_a_token_in_tags_when_synced",
    "TOKEN_REFRESH_INTERVAL_SECONDS",
    "getAccessTokenForInstallation",
    "PasswordResetEmailSender",
    "max_tokens_per_request",
    "ApiKeyRotationScheduler",
    "validate_jwt_signature_or_raise",
    "SecretsManagerClientFactory",
    "OAuth2AuthorizationCodeGrantFilter",
    "privateKeyPemLoader",
    "credentials_provider_chain",
    "x-amz-security-token",
    "AWS_SECRET_ACCESS_KEY",
)

_PROSE = (
    "The API token is read from VAULT_TOKEN at start-up; never put it in the config file.",
    "Rotate the AWS secret every 90 days; the current one lives in 1Password under 'ci-deploy'.",
    "Password reset emails are sent by the mailer service (retry after 15 minutes).",
    "The token budget for the small model is 4096; summaries above that are cut.",
    "Log in to Grafana with your SSO account, not the shared admin.",
    "Sign in with GitHub, then open the deploy page and press Promote.",
    "Passwords must be 12+ characters; we hash them with argon2id (m=65536, t=3, p=4).",
    "The secret key for Django comes from the environment (DJANGO_SECRET_KEY), see settings.py.",
    "Access tokens expire after one hour; refresh tokens after 30 days.",
    "Bob prefers short PR descriptions and squash merges.",
    "The private key for the deploy user is on the bastion, in ~/.ssh/id_ed25519.",
    "Use `gh auth login` once; the token is kept in the macOS keychain.",
    "API keys are per tenant; ask in #platform for a new one instead of sharing.",
    "Credentials for the staging database are in AWS Secrets Manager (staging/db/app).",
    "Le mot de passe n'est jamais écrit ici : il est dans le coffre de l'équipe.",
    "Пароль хранится в менеджере паролей, не в заметках.",
    "令牌保存在保险库中，启动时从环境变量读取。",
    "Die Zugangsdaten liegen im Tresor; bitte nicht in Tickets kopieren.",
    "We log in with the YubiKey5 on the build box; the PIN is with Priya.",
    "The webhook URL for alerts is stored as SLACK_WEBHOOK_URL in the CI settings.",
    "Session tokens are opaque UUIDs; the lookup table is sessions(token_hash).",
    "The release checklist: bump the version, tag, push, wait for the signed build.",
    "The staging admin password is in 1Password, vault 'platform'.",
    "the pw is in 1Password (shared vault), ask Priya for access",
    "Das Passwort für Jenkins liegt in 1Password unter 'ci'.",
    "Das Passwort muss mindestens 12 Zeichen haben und wird alle 90 Tage geändert.",
    "Le mot de passe est dans 1Password (coffre « équipe »).",
    "La contraseña de la base está en Bitwarden; nunca en el ticket.",
    "A senha é trocada a cada 90 dias pelo time de plataforma.",
    "Het wachtwoord staat in KeePassXC op de beheer-laptop.",
    "pw policy: 12 chars min, rotated every 90 days (PW_MIN_LENGTH=12)",
    "密码保存在 1Password 的 platform 保险库中，不要写进工单。",
    "パスワードのハッシュは argon2id、鍵の導出は pbkdf2-sha256。",
    "Пароль от стенда хранится в Vault, путь secret/staging/db.",
)


_SMALL_PAYLOADS = (b"hello world", b'{"ok": true}', b"ping", b"user=ana;theme=dark;lang=fr-FR")


def _ordinary_line(rng: random.Random) -> str:
    service = rng.choice(_SERVICES)
    sha, short = draw(rng, HEX, 40), draw(rng, HEX, rng.randrange(7, 12))
    digest = draw(rng, HEX, 64)
    choices = (
        lambda: rng.choice(_PROSE),
        lambda: f"Fixed in {sha} ({service}: retry on 502).",
        lambda: (
            f"git cherry-pick {short} && git push origin "
            f"release/{rng.randrange(1, 9)}.{rng.randrange(20)}"
        ),
        lambda: f"image: ghcr.io/acme/{service}@sha256:{digest}",
        lambda: f"{digest}  dist/{service}-{rng.randrange(1, 5)}.{rng.randrange(30)}.0.tar.gz",
        lambda: f"request {_uuid(rng)} failed with 503 after {rng.randrange(100, 9000)} ms",
        lambda: f"tenant_id={_uuid(rng)} job={_ulid(rng)} status=failed",
        lambda: f"trace_id={draw(rng, HEX, 32)} span_id={draw(rng, HEX, 16)} service={service}",
        lambda: f"![diagram](data:image/png;base64,{_png(rng)})",
        lambda: f'"integrity": "{_integrity(rng)}",',
        lambda: (
            f"https://github.com/acme/{service}/pull/{rng.randrange(100, 9999)}#discussi"
            f"on_r{rng.randrange(10**8, 10**9)}"
        ),
        lambda: (
            "https://grafana.acme.io/d/"
            + draw(rng, BASE62, 9)
            + f"/{service}-latency?orgId=1&from=now-6h&var-env=prod"
        ),
        lambda: (
            "https://github.com/acme/shop/issues?q="
            + urllib.parse.quote("is:open label:bug author:@me")
        ),
        lambda: f"See {rng.choice(_IDENTIFIERS)} in src/{service}/{rng.choice(_IDENTIFIERS)}.py",
        lambda: f'token = os.environ["{service.upper().replace("-", "_")}_TOKEN"]',
        lambda: f"password=settings.{service.upper().replace('-', '_')}_DB_PASSWORD,",
        lambda: 'headers = {"Authorization": f"Bearer {token}"}',
        lambda: "NPM_TOKEN: ${{ secrets.NPM_TOKEN }}",
        lambda: f"export AWS_PROFILE={service}-staging AWS_REGION=eu-west-1",
        lambda: f"aws s3 cp s3://acme-{service}/exports/{_uuid(rng)}.parquet .",
        lambda: (
            f"kubectl -n {service} logs {service}-{draw(rng, HEX, 9)}-"
            + draw(rng, string.ascii_lowercase + string.digits, 5)
        ),
        lambda: f"cache key: v2-deps-{draw(rng, HEX, 40)}",
        lambda: rng.choice(
            (
                f"FROM ubuntu:jammy-2024{rng.randrange(1000, 9999)}",
                f"image: postgres:{rng.randrange(12, 17)}.{rng.randrange(9)}-alpine",
                "chown root:root /etc/hosts && chmod 644 /etc/hosts",
                "grant admin:read and admin:write to the release bot",
                "sign in with Google / GitHub / email on the login page",
                f"login flow: oauth2/Authorize then token/Refresh{rng.randrange(9)}",
                "Account switch: Personal / Work2024 profile",
                f"ssh -p 22{rng.randrange(10, 99)} deploy@bastion.acme.io",
                "mysql -u root -p shop   # asks for the password",
                'docker login -u ci -p "$REGISTRY_TOKEN" registry.acme.io',
                'curl -u "$JENKINS_USER:$JENKINS_TOKEN" https://jenkins.acme.io/api/json',
                "log in as admin / the password is in the team vault",
                f"the login page lives at admin/Login{rng.randrange(9)} and /admin/settings",
            )
        ),
        lambda: (
            f"- [{rng.choice('x ')}] migrate {service} to the new token format "
            f"(ADR-{rng.randrange(10, 99)})"
        ),
        lambda: (
            f"| {service} | p95 {rng.randrange(20, 900)} ms | "
            f"{rng.randrange(1, 99)}.{rng.randrange(10)} % errors |"
        ),
        lambda: (
            f"2024-0{rng.randrange(1, 9)}-1{rng.randrange(9)}T10:{rng.randrange(10, 59)}"
            f":00Z INFO {service} token refreshed for user {rng.randrange(10**5)}"
        ),
        lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{draw(rng, B64, 43)} deploy@{service}",
        lambda: (
            "AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY are the AW"
            "S docs' examples"
        ),
        lambda: f"echo {base64.b64encode(rng.choice(_SMALL_PAYLOADS)).decode()} | base64 -d",
        lambda: (
            f"curl 'https://api.acme.io/search?q={urllib.parse.quote(rng.choice(_PROSE)[:40])}'"
        ),
        lambda: f"def rotate_token(old_token: str, ttl: int = {rng.randrange(60, 7200)}) -> str:",
        lambda: "assert token_hash == hashlib.sha256(token.encode()).hexdigest()",
        lambda: f"Reverted {short}: the token cache ({service}) double-counted expiries.",
        lambda: (
            f"The release tag is v{rng.randrange(1, 5)}.{rng.randrange(40)}.{rng.randrange(20)}"
            f" (commit {short})."
        ),
        lambda: f"Tom &amp; Ana moved the {service} on-call to Thursdays &mdash; see the wiki.",
        lambda: f"x-request-id: {draw(rng, BASE62, 22)}",
    )
    return rng.choice(choices)()


def _code_block(rng: random.Random) -> str:
    service = rng.choice(_SERVICES)
    upper = service.upper().replace("-", "_")
    version = f"{rng.randrange(1, 4)}.{rng.randrange(30)}.0"
    blocks = (
        "```python\ndef client() -> Client:\n"
        f'    api_key = os.environ["{upper}_API_KEY"]\n'
        f'    return Client(base_url="https://{service}.acme.io", api_key=api_key)\n```',
        f"```yaml\nservices:\n  {service}:\n    image: ghcr.io/acme/{service}:{version}\n"
        "    environment:\n      DB_PASSWORD: ${DB_PASSWORD}\n"
        f"      TOKEN_TTL: {rng.randrange(60, 86400)}\n```",
        "```sh\nexport GITHUB_TOKEN=$(gh auth token)\n"
        f"gh api repos/acme/{service}/actions/runs --jq '.workflow_runs[0].id'\n```",
        "```sql\nSELECT id, token_hash, expires_at FROM sessions\n"
        f"WHERE user_id = {rng.randrange(10**6)} AND revoked = false;\n```",
        f'```json\n{{"name": "{service}", "version": "{version}",\n'
        f' "resolved": "https://registry.npmjs.org/{service}/-/{service}-{version}.tgz",\n'
        f' "integrity": "{_integrity(rng)}"}}\n```',
        "```ts\nconst token = await getAccessTokenSilently(\n"
        f'  {{ audience: "https://{service}.acme.io" }});\n```',
        "```diff\n- const secret = process.env.SESSION_SECRET || 'dev';\n"
        "+ const secret = requireEnv('SESSION_SECRET');\n```",
    )
    return rng.choice(blocks)


def ordinary_notes(seed: int, count: int = 5000) -> list[str]:
    """``count`` developer notes with no credential in them."""
    rng = random.Random(seed)
    notes = []
    for _ in range(count):
        parts = [_ordinary_line(rng) for _ in range(rng.randrange(1, 6))]
        if rng.random() < 0.3:
            parts.insert(rng.randrange(len(parts) + 1), _code_block(rng))
        notes.append("\n".join(parts))
    return notes
