"""Detection rates of the credential check: generated secrets per pattern, false positives,
and the labelled corpus of whole notes (``secrets_corpus``).

Usage::

    .venv/bin/python bench/secrets_detection.py            # 2,000 values per pattern
    .venv/bin/python bench/secrets_detection.py --quick    # 200 per pattern, for CI smoke runs
    .venv/bin/python bench/secrets_detection.py --check    # exit 1 above the targets
    .venv/bin/python bench/secrets_detection.py --seed 7   # another draw of the values

The corpus: notes holding a credential in every form ``secrets_corpus`` writes (providers,
prose, encodings, lookalikes, key bodies, service-account JSON) must be caught in at least
97 % of cases; of 5,000 ordinary developer notes at most 0.5 % may be refused. Both figures
are printed; ``--check`` fails below either target.

Each pattern puts a freshly generated value (a random password, hex, base62 or base64 string,
or a provider token of its documented shape) into a line as people write it, and counts the
lines where ``find_secrets`` reports nothing. The false-positive side scans prose and code
that hold no credential: the hand-written corpus ``tests/data/secrets/negatives.txt``, every
line of this repository's source, docs and specification, and (when present) the LoCoMo
dialogues in ``../shared/data/locomo`` as ordinary conversation. Targets: at most 0.5 % misses
per pattern, no false positive at all. A fixed seed (``--seed``) makes the run repeatable;
other seeds show the figures are not the luck of one draw.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # secrets_corpus, imported by name

from secrets_corpus import ordinary_notes, secret_notes

from oharness.notes.secrets import find_secrets

ROOT = Path(__file__).resolve().parent.parent
MAX_MISS_RATE = 0.005
#: The corpus targets (issue: "≥ 97 % of secrets caught, ≤ 0.5 % of ordinary notes refused").
MIN_CAUGHT = 0.97
MAX_REFUSED = 0.005

Generator = Callable[[random.Random], str]

BASE62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
BASE64 = string.ascii_letters + string.digits + "+/"
URLSAFE = string.ascii_letters + string.digits + "-_"
# What password generators and managers use by default (1Password, Bitwarden, pwgen -y).
PASSWORD = string.ascii_letters + string.digits + "!@#$%^&*-_=+.?~"


def _draw(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def value(alphabet: str, length: int) -> Generator:
    """A generator of random values over ``alphabet``."""
    return lambda rng: _draw(rng, alphabet, length)


def mixed(length: int) -> Generator:
    """A value from one of the usual alphabets, chosen at random per value."""
    alphabets = (BASE62, HEX, BASE64, URLSAFE, PASSWORD)
    return lambda rng: _draw(rng, rng.choice(alphabets), length)


def _jwt(rng: random.Random) -> str:
    header = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    return f"{header}.eyJ{_draw(rng, URLSAFE, 40)}.{_draw(rng, URLSAFE, 43)}"


def _aws_pair(rng: random.Random) -> str:
    return f"AKIA{_draw(rng, string.ascii_uppercase + string.digits, 16)}"


# (kind, line template with {v}, value generator). Several patterns per kind.
PATTERNS: list[tuple[str, str, Generator]] = [
    ("password", "DB_PASSWORD={v}", mixed(20)),
    ("password", "password: {v}", mixed(16)),
    ("password", "the password is {v}", mixed(14)),
    ("password", '"password": "{v}"', mixed(16)),
    ("password", "export PGPASSWORD='{v}'", mixed(18)),
    ("password", "mysql -u root --password={v}", mixed(16)),
    ("password", "The admin password is {v} (rotate it).", mixed(12)),
    ("password", "pwd = {v}", mixed(14)),
    ("api key", "api_key = {v}", mixed(32)),
    ("api key", '"apiKey": "{v}"', value(BASE62, 32)),
    ("api key", "X-Api-Key: {v}", value(HEX, 32)),
    ("api key", "STRIPE_API_KEY={v}", value(BASE62, 24)),
    ("secret", "SECRET_TOKEN={v}", mixed(24)),
    ("secret", "client_secret: {v}", value(URLSAFE, 40)),
    ("secret", "aws_secret_access_key = {v}", value(BASE64, 40)),
    ("secret", "AWS_SECRET_ACCESS_KEY={v}", value(BASE64, 40)),
    ("token", "auth_token={v}", value(HEX, 40)),
    ("token", "access_token: '{v}'", value(URLSAFE, 32)),
    ("token", "Authorization: Bearer {v}", value(URLSAFE, 36)),
    ("token", 'curl -H "Authorization: Bearer {v}" https://api.acme.io', value(BASE62, 40)),
    ("provider", "{v}", lambda rng: "ghp_" + _draw(rng, BASE62, 36)),
    ("provider", "token {v}", lambda rng: "github_pat_" + _draw(rng, BASE62 + "_", 82)),
    ("provider", "{v}", lambda rng: "glpat-" + _draw(rng, URLSAFE, 20)),
    ("provider", "{v}", lambda rng: f"xoxb-{rng.randrange(10**11)}-{_draw(rng, BASE62, 24)}"),
    ("provider", "OPENAI_API_KEY={v}", lambda rng: "sk-proj-" + _draw(rng, URLSAFE, 48)),
    ("provider", "{v}", lambda rng: "sk-ant-api03-" + _draw(rng, URLSAFE, 93)),
    ("provider", "{v}", lambda rng: "sk_live_" + _draw(rng, BASE62, 24)),
    ("provider", "key={v}", lambda rng: "AIza" + _draw(rng, URLSAFE, 35)),
    ("provider", "{v}", _aws_pair),
    ("provider", "{v}", _jwt),
    ("provider", "{v}", lambda rng: "npm_" + _draw(rng, BASE62, 36)),
    ("url", "postgres://app:{v}@db.internal:5432/shop", value(BASE62, 16)),
]


DEFAULT_SEED = 20261201


def miss_rates(count: int, seed: int = DEFAULT_SEED) -> list[tuple[str, str, int]]:
    """``(kind, pattern, misses)`` for each pattern over ``count`` generated values."""
    rng = random.Random(seed)
    rows = []
    for kind, template, generate in PATTERNS:
        misses = 0
        for _ in range(count):
            line = template.format(v=generate(rng))
            if not find_secrets({"body": line}):
                misses += 1
        rows.append((kind, template, misses))
    return rows


def _unescape(line: str) -> str:
    return line.encode("latin-1", "backslashreplace").decode("unicode_escape")


def corpus() -> Iterator[tuple[str, str]]:
    """``(source, text)`` pieces of prose and code with no credential in them."""
    for line in (ROOT / "tests/data/secrets/negatives.txt").read_text("utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            yield "negatives.txt", _unescape(line)
    skip = {
        "secrets",
        "test_secrets",
        "secrets_detection",
        "secrets_bench",
        "secrets_corpus",
        "test_safety",
    }
    for folder, pattern in (("src", "*.py"), ("docs", "*.md"), ("bench", "*.py")):
        for path in sorted((ROOT / folder).rglob(pattern)):
            parts = path.relative_to(ROOT).parts
            if not skip.intersection(parts) and path.stem not in skip:
                yield str(path.relative_to(ROOT)), path.read_text("utf-8")
    for path in sorted((ROOT.parent / "shared" / "spec").glob("*.md")):
        yield f"spec/{path.name}", path.read_text("utf-8")
    locomo = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
    if locomo.is_file():
        for sample in json.loads(locomo.read_text("utf-8")):
            conversation = sample.get("conversation", {})
            for key, turns in conversation.items():
                if key.startswith("session_") and isinstance(turns, list):
                    text = "\n".join(str(turn.get("text", "")) for turn in turns)
                    yield f"locomo/{sample.get('sample_id')}/{key}", text


# Files that hold a real credential-shaped literal on purpose (the signing secret of a
# benchmark's own sync server): reporting it is right, so they are not part of the corpus.
HOLDS_A_SECRET = {"bench/_support.py", "bench/sync_server.py", "bench/sync_traffic.py"}


def false_positives() -> tuple[int, int, list[str]]:
    """Pieces scanned, characters scanned, and a description of each false positive."""
    pieces = characters = 0
    found: list[str] = []
    for source, text in corpus():
        if source in HOLDS_A_SECRET:
            continue
        pieces += 1
        characters += len(text)
        for finding in find_secrets({"body": text}):
            found.append(f"{source}: {finding.describe()}")
    return pieces, characters, found


class CorpusFigures:
    """What the labelled corpus measured: caught and refused rates, misses per form."""

    def __init__(self, seed: int, per_form: int, ordinary: int) -> None:
        secrets = secret_notes(seed, per_form)
        self.missed: dict[str, int] = {}
        self.totals: dict[str, int] = {}
        for form, text in secrets:
            self.totals[form] = self.totals.get(form, 0) + 1
            if not find_secrets({"body": text}):
                self.missed[form] = self.missed.get(form, 0) + 1
        self.secrets = len(secrets)
        notes = ordinary_notes(seed, ordinary)
        self.ordinary = len(notes)
        self.refused = [note for note in notes if find_secrets({"body": note})]

    @property
    def caught_rate(self) -> float:
        return 1 - sum(self.missed.values()) / self.secrets

    @property
    def refused_rate(self) -> float:
        return len(self.refused) / self.ordinary

    def passed(self) -> bool:
        return self.caught_rate >= MIN_CAUGHT and self.refused_rate <= MAX_REFUSED


def print_corpus(figures: CorpusFigures) -> None:
    """The two corpus figures, the misses per form and a few refused notes."""
    print(
        f"corpus: {figures.caught_rate:.2%} of {figures.secrets} secret notes caught "
        f"(target >= {MIN_CAUGHT:.0%}); {figures.refused_rate:.2%} of {figures.ordinary} "
        f"ordinary notes refused (target <= {MAX_REFUSED:.1%})"
    )
    for form, misses in sorted(figures.missed.items()):
        print(f"  missed {form:<26} {misses:>4} of {figures.totals[form]}")
    for note in figures.refused[:5]:
        print(f"  refused: {note[:100]!r}")


def main(argv: list[str] | None = None) -> int:
    """Print the table of misses per pattern and the false positives; 1 when over target."""
    parser = argparse.ArgumentParser(description="Detection rates of the credential check.")
    parser.add_argument("--quick", action="store_true", help="200 values per pattern")
    parser.add_argument("--count", type=int, default=None, help="values per pattern")
    parser.add_argument("--check", action="store_true", help="exit 1 above the targets")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the values")
    args = parser.parse_args(argv)
    count = args.count or (200 if args.quick else 2000)
    rows = miss_rates(count, args.seed)
    print(
        f"misses per pattern, {count} generated values each, seed {args.seed}"
        f" (target <= {MAX_MISS_RATE:.1%})"
    )
    worst = 0.0
    for (kind, template, misses), (_, _, generate) in zip(rows, PATTERNS, strict=True):
        rate = misses / count
        worst = max(worst, rate)
        shown = template if template != "{v}" else generate(random.Random(0))[:24] + "…"
        print(f"  {kind:<9} {shown:<58} {misses:>5} {rate:7.2%}")
    pieces, characters, found = false_positives()
    print(f"false positives: {len(found)} in {pieces} pieces ({characters:,} characters)")
    for line in found[:20]:
        print(f"  {line}")
    figures = CorpusFigures(args.seed, 20 if args.quick else 60, 5000)
    print_corpus(figures)
    failed = worst > MAX_MISS_RATE or bool(found) or not figures.passed()
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
