"""The missing-file rule (spec 05.1; docs/review.md): which paths a note names."""

from __future__ import annotations

import pytest

from oharness.review.missing_paths import missing_paths, referenced_paths


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ("Edit `src/pricing/cards.tsx` first.", ("src/pricing/cards.tsx",)),
        ("See [the doc](docs/a.md#usage) and [b](./docs/b.md?x=1).", ("docs/a.md", "docs/b.md")),
        ("[scripts](scripts) hold the tools", ("scripts",)),
        ("Folder `docs/` only.", ("docs/",)),
        ("Unicode `docs/übersicht.md` and `文档/说明.md`.", ("docs/übersicht.md", "文档/说明.md")),
        ("Twice `a/b.py` and `a/b.py`.", ("a/b.py",)),
    ],
)
def test_paths_that_count(body: str, paths: tuple[str, ...]) -> None:
    assert referenced_paths(body) == paths


@pytest.mark.parametrize(
    "body",
    [
        "Words `and/or`, `origin/main`, `application/json`, `cards.tsx`.",
        "Absolute `/etc/hosts`, `~/notes/a.md`, `C:\\x\\y.txt`.",
        "URLs `https://x.test/a.md`, [site](https://x.test/docs/a.md), [m](mailto:a@b.test).",
        "Placeholders `path/to/file.py`, `src/foo.py`, `your-app/main.go`, `src/*.py`.",
        "Variables `$HOME/x.md`, `%APPDATA%/y.ini`, `{root}/z.md`.",
        "Escaping `../other/a.md` and spaced `my docs/a.md`.",
        "Anchor only [top](#top).",
        "```\nexample `src/example-only.py`\n[x](docs/in-fence.md)\n```\n",
        "~~~python\nopen('data/file.csv')  # `data/file.csv`\n~~~\n",
    ],
)
def test_what_is_not_a_path(body: str) -> None:
    assert referenced_paths(body) == ()


def test_only_paths_that_do_not_exist_are_missing() -> None:
    body = "`src/here.py`, `src/gone.py` and [guide](docs/guide.md)."
    exists = {"src/here.py"}.__contains__
    assert missing_paths(body, exists) == ("src/gone.py", "docs/guide.md")


def test_text_after_a_fence_counts_again() -> None:
    body = "```\n`src/in.py`\n```\nAfter: `src/after.py`.\n"
    assert referenced_paths(body) == ("src/after.py",)
