"""Every section has its template and label; every static file the page names ships."""

from __future__ import annotations

from importlib import resources

from oharness.daemon.page.i18n import LANGUAGES, catalogue
from oharness.daemon.page.render import environment
from oharness.daemon.page.router import SECTIONS, STATIC_FILES, described_sections
from oharness.harness.memory_plugin import MEMORY_PAGE

PACKAGE = resources.files("oharness.daemon.page")


def test_the_descriptor_and_the_sections_agree() -> None:
    assert [s.name for s in described_sections()] == [s.id for s in MEMORY_PAGE.sections]
    assert set(SECTIONS) == {s.id for s in MEMORY_PAGE.sections}


def test_every_section_has_a_template_and_labels() -> None:
    for name in SECTIONS:
        environment().get_template(f"sections/{name}.html")
        for language in LANGUAGES:
            assert f"nav.{name}" in catalogue(language), (name, language)


def test_every_static_file_ships_and_the_layout_names_only_those() -> None:
    for name in STATIC_FILES:
        assert PACKAGE.joinpath("static", name).is_file(), name
    layout = PACKAGE.joinpath("templates", "base.html").read_text("utf-8")
    import re

    named = set(re.findall(r"/memory/static/([\w.-]+)", layout))
    assert named and named <= set(STATIC_FILES)
    assert all(name in STATIC_FILES for name in ("htmx-LICENSE.txt", "htmx-ext-sse-LICENSE.txt"))
