"""What the page says, read from the browser: every visible text that is the page's own words
(not the person's data), for the translation and plural checks (imported by bare name)."""

from __future__ import annotations

import re
from typing import Final

from playwright.sync_api import Page

#: The page's own words: every visible text node (screen-reader-only text included) outside
#: what holds the person's data or commands: ``code``, ``pre``, editors, and anything whose
#: nearest ``translate`` attribute says "no" (HTML's own mark for "do not translate").
_OWN_WORDS: Final = """() => {
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    const text = node.textContent.trim();
    if (!element || !text) continue;
    if (element.closest("script, style, code, pre, textarea, svg title")) continue;
    const marked = element.closest("[translate]");
    if (marked && marked.getAttribute("translate") === "no") continue;
    if (!element.getClientRects().length) continue;
    if (getComputedStyle(element).visibility === "hidden") continue;
    found.push(text);
  }
  for (const element of document.querySelectorAll("[aria-label], [placeholder]")) {
    const marked = element.closest("[translate]");
    if (marked && marked.getAttribute("translate") === "no") continue;
    for (const name of ["aria-label", "placeholder"]) {
      const value = element.getAttribute(name);
      if (value) found.push(value);
    }
  }
  return found;
}"""

#: Latin words a zh-CN page may show: the time zone, key names, the English language link
#: (named in its own language), config keys and an environment variable named in messages.
ALLOWED_LATIN: Final = frozenset(
    {
        "UTC",
        "HTTP",
        "id",
        "English",
        "zh",
        "CN",
        "Tab",
        "Enter",
        "OHARNESS_HOME",
        "remember",
        "memory",
        "maxNoteBytes",
        "maxNotes",
    }
)
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z_]+")
#: A count of one with a plural noun: "1 notes", "1 new conflicts".
_PLURAL_AFTER_ONE: Final = re.compile(
    r"(?<![\d.,])1 (?:[a-z]+ )?(?:notes|conflicts|backups|recalls|days|findings|characters|"
    r"bytes|matches|links)\b"
)


def own_words(page: Page) -> list[str]:
    """The visible texts of the page that are its own words."""
    texts: list[str] = page.evaluate(_OWN_WORDS)
    return texts


def english_in(texts: list[str]) -> list[str]:
    """The texts holding a Latin word a zh-CN page should not show."""
    return [text for text in texts if any(w not in ALLOWED_LATIN for w in _WORD.findall(text))]


def plural_errors(texts: list[str]) -> list[str]:
    """The texts that pair the number one with a plural noun."""
    return [text for text in texts if _PLURAL_AFTER_ONE.search(text)]
