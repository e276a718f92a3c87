"""The rule table of the credential check: provider token formats, URLs, HTTP schemes."""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Iterator
from typing import Final

from oharness.notes.secrets.values import (
    _is_placeholder,
    _lazy,
    _looks_like_password,
    _looks_random,
    _plausible_token_body,
)

_Span = tuple[int, int, str]  # start, end (in the scanned text), kind


# Plain slotted classes rather than dataclasses: each dataclass costs ~0.5 ms at import.
class _Subject:
    """The text under scan plus ASCII byte copies of it, exact and lower-cased.

    Non-ASCII characters become "?" (one byte each), so a position in a copy is the same
    position in ``text``. Substring search in bytes is several times faster than ``str.find``
    on text stored with two or four bytes per character, and lower-casing bytes never changes
    the length (``str.lower`` does, for U+0130).
    """

    __slots__ = ("exact", "lowered", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.exact = text.encode("ascii", "replace")
        self.lowered = self.exact.lower()


class _Rule:
    """A detector that runs only when one of ``hints`` occurs in the text.

    With ``ignore_case`` the hints are looked up in the lower-cased copy. Hints are plain
    substring searches, far cheaper than a regex scan, so a note without any hint costs
    almost nothing; most rules also start matching only where a hint occurs.
    """

    __slots__ = ("hints", "ignore_case", "scan")

    def __init__(
        self,
        hints: tuple[bytes, ...],
        scan: Callable[[_Subject], Iterator[_Span]],
        ignore_case: bool = False,
    ) -> None:
        self.hints = hints
        self.scan = scan
        self.ignore_case = ignore_case


def _pattern_rule(
    kind: str, prefixes: tuple[str, ...], pattern: str, accept: Callable[[str], bool]
) -> _Rule:
    """A rule for one token format that starts with one of ``prefixes``; the match is redacted."""
    compiled = _lazy(pattern)
    anchors = _ascii(prefixes)

    def scan(subject: _Subject) -> Iterator[_Span]:
        for match in _anchored_matches(subject.text, subject.exact, anchors, compiled()):
            if accept(match.group()):
                yield match.start(), match.end(), kind

    return _Rule(anchors, scan)


def _ascii(words: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(word.encode("ascii") for word in words)


def _body_after(prefix_length: int) -> Callable[[str], bool]:
    return lambda token: _plausible_token_body(token[prefix_length:])


def _find_all(haystack: bytes, needles: tuple[bytes, ...]) -> list[int]:
    positions: list[int] = []
    for needle in needles:
        position = haystack.find(needle)
        while position != -1:
            positions.append(position)
            position = haystack.find(needle, position + 1)
    positions.sort()
    return positions


def _anchored_matches(
    text: str, haystack: bytes, anchors: tuple[bytes, ...], pattern: re.Pattern[str]
) -> Iterator[re.Match[str]]:
    """Matches of ``pattern`` in ``text`` starting where an anchor occurs in ``haystack``.

    ``haystack`` is one of the byte copies of ``text`` (see :class:`_Subject`). Patterns that
    start with a look-behind, an alternation or case-insensitive letters get no literal-prefix
    search from the regex engine and cost a full scan; finding the anchors first is many times
    faster.
    """
    resume = 0
    for position in _find_all(haystack, anchors):
        if position < resume:
            continue
        match = pattern.match(text, position)
        if match is not None:
            resume = match.end()
            yield match


def _at_word_start(text: str, position: int) -> bool:
    return position == 0 or not text[position - 1].isalnum()


_B: Final = r"(?<![A-Za-z0-9_\-])"  # token start: not glued to a longer word
_E: Final = r"(?![A-Za-z0-9_\-])"  # token end

_PRIVATE_KEY_PATTERN: Final = (
    r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:\\[nr]|\s)+[A-Za-z][A-Za-z\-]*:[^\n\\]*)*"  # armour headers: Proc-Type, Version
    r"(?:\\[nr]|\s)+[A-Za-z0-9+/=]{16,}"
    r"(?:(?:\\[nr]|\r?\n)+[A-Za-z0-9+/=]+)*"
    r"(?:(?:\\[nr]|\s)*-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----)?"
)


def _jwt_ok(token: str) -> bool:
    return not _is_placeholder(token.rsplit(".", 1)[1])


def _openai_ok(token: str) -> bool:
    return _looks_random(token[3:], 20) and any(ch.isdigit() for ch in token)


_PRIVATE_KEY_RULE: Final = _pattern_rule(
    "private key block", ("-----BEGIN",), _PRIVATE_KEY_PATTERN, lambda _block: True
)
_TOKEN_RULES: Final = (
    _pattern_rule(
        "GitHub token",
        ("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_"),
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{50,255})" + _E,
        lambda token: _plausible_token_body(token.split("_", 1)[1].removeprefix("pat_")),
    ),
    _pattern_rule(
        "GitLab token",
        ("glpat-", "glptt-", "glrt-", "gldt-"),
        _B + r"gl(?:pat|ptt|rt|dt)-[A-Za-z0-9_\-]{20,255}",
        lambda token: _plausible_token_body(token.split("-", 1)[1]),
    ),
    _pattern_rule(
        "Slack webhook URL",
        ("https://hooks.slack.com/", "http://hooks.slack.com/", "hooks.slack.com/"),
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}",
        lambda url: _plausible_token_body(url.rsplit("/", 1)[1]),
    ),
    _pattern_rule(
        "Discord webhook URL",
        ("https://discord.com/api/webhooks/", "/api/webhooks/"),
        r"(?:https://discord\.com)?/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_\-]{60,68}",
        lambda url: _plausible_token_body(url.rsplit("/", 1)[1]),
    ),
    _pattern_rule(
        "Slack token",
        ("xox", "xapp-"),
        _B + r"(?:xox[abposre]-[0-9]+-[A-Za-z0-9\-]{8,255}"
        r"|xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]{32,})",
        lambda token: _plausible_token_body(token.rsplit("-", 1)[1]),
    ),
    _pattern_rule(
        "Stripe key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_"),
        _B + r"(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,255}|whsec_[A-Za-z0-9+/=]{24,})" + _E,
        lambda token: _plausible_token_body(token.rsplit("_", 1)[1]),
    ),
    _pattern_rule(
        "Google OAuth secret",
        ("GOCSPX-", "ya29.", "1//0"),
        _B + r"(?:GOCSPX-[A-Za-z0-9_\-]{28}|ya29\.[A-Za-z0-9_\-]{30,}|1//0[A-Za-z0-9_\-]{40,})",
        lambda token: _plausible_token_body(token[5:]),
    ),
    _pattern_rule(
        "Shopify or DigitalOcean token",
        ("shpat_", "shpss_", "shpca_", "shppa_", "dop_v1_", "doo_v1_"),
        _B + r"(?:shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|do[op]_v1_[a-f0-9]{64})" + _E,
        _body_after(6),
    ),
    _pattern_rule(
        "OpenAI/Anthropic API key", ("sk-",), _B + r"sk-[A-Za-z0-9_\-]{20,255}", _openai_ok
    ),
    _pattern_rule("Google API key", ("AIza",), _B + r"AIza[A-Za-z0-9_\-]{35}" + _E, _body_after(4)),
    _pattern_rule("npm token", ("npm_",), _B + r"npm_[A-Za-z0-9]{36}" + _E, _body_after(4)),
    _pattern_rule(
        "Hugging Face token", ("hf_",), _B + r"hf_[A-Za-z0-9]{34,40}" + _E, _body_after(3)
    ),
    _pattern_rule("PyPI token", ("pypi-",), _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}", _body_after(8)),
    _pattern_rule(
        "SendGrid API key",
        ("SG.",),
        _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E,
        _body_after(3),
    ),
    _pattern_rule(
        "JWT",
        ("eyJ",),
        _B + r"eyJ[A-Za-z0-9_\-]{7,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}" + _E,
        _jwt_ok,
    ),
)


def _provider(kind: str, prefix: str, rest: str) -> _Rule:
    """A token that starts with the literal ``prefix``, as gitleaks' rule of that provider."""
    return _pattern_rule(
        kind, (prefix,), _B + re.escape(prefix) + rest + _E, _body_after(len(prefix))
    )


def _search_rule(kind: str, hint: str, rest: str) -> _Rule:
    """A token whose literal part is inside it: the whole text is searched when ``hint`` occurs."""
    compiled = _lazy(_B + rest + _E)

    def scan(subject: _Subject) -> Iterator[_Span]:
        for match in compiled().finditer(subject.text):
            if _plausible_token_body(match.group()):
                yield match.start(), match.end(), kind

    return _Rule(_ascii((hint,)), scan)


# Further providers, each one literal prefix and the token's shape after it, as the gitleaks
# rules of the same name have them.
_PROVIDER_RULES: Final = (
    _provider("Twilio API key", "SK", r"[0-9a-fA-F]{32}"),
    _provider("Mailgun key", "key-", r"[0-9a-f]{32}"),
    _provider("Square token", "EAAA", r"[A-Za-z0-9_\-]{22,60}"),
    _provider("Square token", "sq0atp-", r"[A-Za-z0-9_\-]{22}"),
    _provider("Square token", "sq0csp-", r"[A-Za-z0-9_\-]{43}"),
    _provider("Groq API key", "gsk_", r"[A-Za-z0-9]{52}"),
    _provider("Age secret key", "AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _provider("Databricks token", "dapi", r"[a-f0-9]{32}(?:-[0-9])?"),
    _provider("Pulumi token", "pul-", r"[a-f0-9]{40}"),
    _provider("Postman API key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    _provider("New Relic key", "NRAK-", r"[A-Z0-9]{27}"),
    _provider("New Relic key", "NRJS-", r"[a-f0-9]{19}"),
    _provider("New Relic key", "NRII-", r"[A-Za-z0-9_\-]{32}"),
    _provider("Grafana token", "glc_", r"[A-Za-z0-9+/]{32,400}={0,2}"),
    _provider("Grafana token", "glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    _provider("Docker Hub token", "dckr_pat_", r"[A-Za-z0-9_\-]{27,}"),
    _provider("Docker Hub token", "dckr_oat_", r"[A-Za-z0-9_\-]{32,}"),
    _provider("Linear API key", "lin_api_", r"[A-Za-z0-9]{40}"),
    _provider("Notion token", "ntn_", r"[A-Za-z0-9]{40,50}"),
    _provider("Doppler token", "dp.", r"(?:st|sa|ct|pt|scim|audit)\.[A-Za-z0-9_\-.]{40,64}"),
    _provider("Atlassian API token", "ATATT3", r"[A-Za-z0-9_\-=]{150,220}"),
    _provider("Figma token", "figd_", r"[A-Za-z0-9_\-]{40}"),
    _provider("Mapbox secret token", "sk.eyJ", r"[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"),
    _provider("Sentry token", "sntrys_", r"[A-Za-z0-9+/=_\-]{40,}"),
    _provider("Sentry token", "sntryu_", r"[a-f0-9]{64}"),
    _provider("PlanetScale token", "pscale_", r"(?:tkn|pw|oauth)_[A-Za-z0-9_\-=.]{32,64}"),
    _provider("1Password service account token", "ops_", r"[A-Za-z0-9+/=]{100,}"),
    _provider("RubyGems key", "rubygems_", r"[a-f0-9]{48}"),
    _provider("Shippo token", "shippo_", r"(?:live|test)_[a-fA-F0-9]{40}"),
    _provider("Contentful token", "CFPAT-", r"[A-Za-z0-9_\-]{43}"),
    _provider("Dynatrace token", "dt0c01.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    _provider("Fly.io token", "fm2_", r"[A-Za-z0-9+/=,_\-]{50,}"),
    _provider("Fly.io token", "fo1_", r"[A-Za-z0-9_\-]{43}"),
    _provider("Netlify token", "nfp_", r"[A-Za-z0-9]{36}"),
    _provider("Vault token", "hvs.", r"[A-Za-z0-9_\-]{24,}"),
    _provider("Vault token", "hvb.", r"[A-Za-z0-9_\-]{100,}"),
    _provider("Supabase key", "sbp_", r"[a-f0-9]{40}"),
    _provider("Supabase key", "sb_secret_", r"[A-Za-z0-9_\-]{30,}"),
    _provider("Sourcegraph token", "sgp_", r"(?:[a-f0-9]{16}_)?[a-f0-9]{40}"),
    _provider("Brevo key", "xkeysib-", r"[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _provider("Heroku key", "HRKU-", r"[A-Za-z0-9_\-]{58,}"),
    _provider("Airtable token", "pat", r"[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    _provider("Replicate token", "r8_", r"[A-Za-z0-9]{37}"),
    _provider("xAI key", "xai-", r"[A-Za-z0-9]{80}"),
    _provider("Perplexity key", "pplx-", r"[A-Za-z0-9]{48}"),
    _provider("Tavily key", "tvly-", r"(?:dev-|prod-)?[A-Za-z0-9]{32}"),
    _provider("LangSmith key", "lsv2_", r"(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    _provider("NVIDIA key", "nvapi-", r"[A-Za-z0-9_\-]{64}"),
    _provider("Typeform token", "tfp_", r"[A-Za-z0-9_\-.=]{59}"),
    _provider("Adafruit key", "aio_", r"[A-Za-z0-9]{28}"),
    _provider("Prefect key", "pnu_", r"[A-Za-z0-9]{36}"),
    _provider("ReadMe key", "rdme_", r"[a-z0-9]{70}"),
    _provider("Duffel token", "duffel_", r"(?:test|live)_[A-Za-z0-9_\-=]{43}"),
    _provider("Frame.io token", "fio-u-", r"[A-Za-z0-9_\-=]{64}"),
    _provider("EasyPost key", "EZAK", r"[A-Za-z0-9]{54}"),
    _provider("Flutterwave key", "FLWSECK", r"(?:_TEST)?-[a-h0-9]{32}-X"),
    _provider("Clojars token", "CLOJARS_", r"[a-z0-9]{60}"),
    _provider("Cloudflare origin CA key", "v1.0-", r"[a-f0-9]{24}-[a-f0-9]{146}"),
    _search_rule(
        "Azure AD client secret", "Q~", r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}"
    ),
    _search_rule(
        "Terraform Cloud token", ".atlasv1.", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,70}"
    ),
    _search_rule("Telegram bot token", ":AA", r"[0-9]{5,16}:AA[A-Za-z0-9_\-]{33}"),
    _search_rule("Mailchimp key", "-us", r"[0-9a-f]{32}-us[0-9]{1,2}"),
)

_AWS_KEY_ID_RE: Final = _lazy(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
# The secret key printed right after its key id, as in the CSV AWS hands out.
_AWS_PAIR_RE: Final = _lazy(r"[\s,;:|\"'=]{1,5}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")


def _is_aws_secret_key(value: str) -> bool:
    return (
        len(value) == 40
        and any(ch.isdigit() for ch in value)
        and any(ch.isupper() for ch in value)
        and any(ch.islower() for ch in value)
        and not _is_placeholder(value)
    )


_AWS_PREFIXES: Final = (b"AKIA", b"ASIA")


def _scan_aws_access_keys(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.exact, _AWS_PREFIXES, _AWS_KEY_ID_RE()):
        if "EXAMPLE" in match.group():
            continue
        end = match.end()
        pair = _AWS_PAIR_RE().match(text, end)
        if pair and _is_aws_secret_key(pair.group(1)):
            end = pair.end()
        yield match.start(), end, "AWS access key"


# Starts at the literal "://" so the engine can search for it instead of trying a scheme at
# every letter.
_URL_PASSWORD_RE: Final = _lazy(
    r"://[^\s:/?#@\[\]\"'<>]*:(?P<secret>[^\s/?#@\"'<>]+)@"
    r"(?P<host>[^\s/?#@:\"'<>]*[A-Za-z0-9])"
)
# Documentation hosts (RFC 2606): https://user:pass@example.com is an illustration.
_EXAMPLE_HOST_RE: Final = _lazy(
    r"(?i)(?:.*\.)?(?:example\.(?:com|org|net)|[^.]+\.(?:example|test|invalid)|example)"
)
_URL_PLACEHOLDER_RE: Final = _lazy(
    r"(?i)(?:pass(?:word|wd)?|pwd|pw|secret|token|x+|\*+|\.+|…|changeme"
    r"|<[^>]*>|\{+[^}]*\}+|\[[^\]]*\]|\$\{?\w+\}?|%[a-z0-9_()]*s?)"
)


def _scan_url_passwords(subject: _Subject) -> Iterator[_Span]:
    if b"@" not in subject.exact:
        return
    for match in _URL_PASSWORD_RE().finditer(subject.text):
        password = match.group("secret")
        if len(password) < 3 or _EXAMPLE_HOST_RE().fullmatch(match.group("host")):
            continue
        if _URL_PLACEHOLDER_RE().fullmatch(password) or _is_placeholder(password):
            continue
        yield match.start("secret"), match.end("secret"), "URL with a password"


_BASIC_RE: Final = _lazy(
    r"basic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", re.IGNORECASE | re.ASCII
)


def _is_basic_credential(encoded: str) -> bool:
    # Whole quads only: a2b_base64 would accept excess padding (dXNlcjprOVhx==). The pattern
    # admits nothing else that a strict decoding would refuse.
    if len(encoded) % 4:
        return False
    try:
        decoded = binascii.a2b_base64(encoded).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    _user, colon, password = decoded.partition(":")
    return (
        bool(colon and password)
        and decoded.isprintable()
        and not _URL_PLACEHOLDER_RE().fullmatch(password)
    )


def _scan_basic_credentials(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, (b"basic",), _BASIC_RE()):
        if _at_word_start(text, match.start()) and _is_basic_credential(match.group("secret")):
            yield match.start("secret"), match.end("secret"), "HTTP Basic credential"


_BEARER_RE: Final = _lazy(
    r"bearer[ \t]+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)", re.IGNORECASE | re.ASCII
)


def _scan_bearer_tokens(subject: _Subject) -> Iterator[_Span]:
    text = subject.text
    for match in _anchored_matches(text, subject.lowered, (b"bearer",), _BEARER_RE()):
        if _at_word_start(text, match.start()) and _looks_like_password(match.group("secret"), 16):
            yield match.start("secret"), match.end("secret"), "Bearer token"
