"""Per-call cost of secret detection on 2 KB notes (spec 02.2: "well under 1 ms").

Usage::

    .venv/bin/python bench/secrets_bench.py            # 5000 calls per note
    .venv/bin/python bench/secrets_bench.py --quick    # 200 calls per note, for CI smoke runs

Each note is a summary, tags and a body of about 2 KB (UTF-8 bytes), passed to
``find_secrets`` the way ``remember`` does. Prints mean, p50 and p95 per call in microseconds.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable, Mapping

from oharness.notes.secrets import find_secrets, redact_secrets

NOTE_BYTES = 2048

ASCII_BODY = """\
Deploy notes for the shop API. The password policy requires 12 characters; the token is read
from the environment (see the vault entry "shop/deploy"). We use the Bearer scheme and rotate
keys every 90 days. Ask Priya before touching the auth service.

```python
def refresh(client: Client, token: str) -> str:
    api_key = os.environ["SHOP_API_KEY"]
    response = client.post("/auth/refresh", headers={"Authorization": f"Bearer {token}"})
    response.raise_for_status()
    return response.json()["access_token"]
```

```yaml
services:
  api:
    image: ghcr.io/acme/shop-api:2.14.3
    environment:
      DB_PASSWORD: ${DB_PASSWORD}
      TOKEN_TTL: 3600
```

- max_tokens: 4096, tokenizer: cl100k_base, see [[recall-tuning]]
- commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the key rotation job
- request 123e4567-e89b-12d3-a456-426614174000 failed with 502 during the deploy
- docs: https://docs.acme-corp.io/api/auth#tokens and https://user@git.acme-corp.io/shop.git
- colours #1a73e8 and #ff00aa; package @aws-sdk/client-s3; sk-learn baseline is fine
"""

MULTILINGUAL_BODY = """\
Le mot de passe doit contenir au moins douze caractères ; le jeton d'accès est lu depuis la
variable d'environnement au démarrage. Élodie a noté où se trouve la clé API : dans le coffre.
密码保存在密码管理器中，不要写进笔记。令牌：请参见保险库中的“部署”条目。API 密钥从环境变量读取，
启动时加载。使用 Bearer 方案进行身份验证，令牌有效期为一小时。
パスワードは金庫に保管されています。トークンは環境変数から読み込みます。
"""

INVISIBLES = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\u202e\u2066\u2069"


def _fit(text: str, size: int = NOTE_BYTES) -> str:
    """Repeat ``text`` and cut it to at most ``size`` UTF-8 bytes."""
    repeated = text * (size // max(1, len(text.encode("utf-8"))) + 2)
    while len(repeated.encode("utf-8")) > size:
        repeated = repeated[: -max(1, (len(repeated.encode("utf-8")) - size) // 4)]
    return repeated


def _sprinkle(text: str, every: int = 12) -> str:
    """Insert an invisible character after every ``every`` visible ones."""
    pieces = []
    for index in range(0, len(text), every):
        pieces.append(text[index : index + every])
        pieces.append(INVISIBLES[(index // every) % len(INVISIBLES)])
    return "".join(pieces)


def notes() -> dict[str, dict[str, str]]:
    """The notes measured, by name; each is a mapping of field to text."""
    token_line = "\nexport GITHUB_TOKEN=ghp_jYlCb1nZMJsuPzOkXQ9CKXlucKbn00ycIf1F\n"
    secret_body = _fit(ASCII_BODY, NOTE_BYTES - len(token_line)) + token_line
    return {
        "ascii prose+code": {
            "summary": "Deploy notes for the shop API",
            "tags": "deploy\napi",
            "body": _fit(ASCII_BODY),
        },
        "french/chinese/japanese": {
            "summary": "Où vivent les secrets",
            "tags": "sécurité\n安全",
            "body": _fit(MULTILINGUAL_BODY),
        },
        "ascii with invisibles": {
            "summary": "Deploy notes for the shop API",
            "tags": "deploy\napi",
            "body": _fit(_sprinkle(ASCII_BODY)),
        },
        "ascii with a token": {
            "summary": "Deploy notes for the shop API",
            "tags": "deploy\napi",
            "body": secret_body,
        },
    }


def measure(call: Callable[[], object], iterations: int) -> list[float]:
    """Per-call durations in microseconds, after a short warm-up."""
    for _ in range(min(50, iterations)):
        call()
    durations = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        call()
        durations.append((time.perf_counter_ns() - start) / 1000)
    return durations


def _row(name: str, fields: Mapping[str, str], durations: list[float]) -> str:
    durations = sorted(durations)
    p95 = durations[min(len(durations) - 1, int(len(durations) * 0.95))]
    size = sum(len(value.encode("utf-8")) for value in fields.values())
    found = len(find_secrets(fields))
    return (
        f"{name:<26} {size:>5} B  {found} found  mean {statistics.fmean(durations):6.1f} us"
        f"  p50 {statistics.median(durations):6.1f} us  p95 {p95:6.1f} us"
    )


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print one line per note."""
    parser = argparse.ArgumentParser(description="Per-call cost of secret detection.")
    parser.add_argument("--quick", action="store_true", help="few iterations (CI smoke run)")
    parser.add_argument("--iterations", type=int, default=None, help="calls per note")
    parser.add_argument("--redact", action="store_true", help="also time redact_secrets(body)")
    args = parser.parse_args(argv)
    iterations = args.iterations or (200 if args.quick else 5000)

    print(f"find_secrets, {iterations} calls per note (summary + tags + ~2 KB body)")
    for name, fields in notes().items():
        print(_row(name, fields, measure(functools.partial(find_secrets, fields), iterations)))
    if args.redact:
        print(f"redact_secrets(body), {iterations} calls per note")
        for name, fields in notes().items():
            call = functools.partial(redact_secrets, fields["body"])
            print(_row(name, {"body": fields["body"]}, measure(call, iterations)))


if __name__ == "__main__":
    main()
