"""Translations in a real browser: from the sidebar to a project's grid,
filter to the keys missing in German, translate two of them cell by cell,
export the German PO file and find them in it; import a file with a
progress bar, have a broken file refused whole with its line; create and
delete a project; the grid at 390 px."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.studio.browsing import (
    NARROW,
    Studio,
    assert_clean,
    browser,
    login,
    new_context,
    open_page,
    screenshot,
    scripts_ran,
    section,
    studio,
)

__all__ = ["browser", "new_context", "studio"]


def _site(studio: Studio) -> None:
    keys: dict[str, Any] = {
        "hello": {"en": "Hello", "de": "Hallo", "fr": "Bonjour"},
        "menu.file": {"en": "File", "fr": "Fichier"},
        "menu.edit": {"en": "Edit", "fr": "Éditer"},
        "menu.view": {"en": "View", "de": "Ansicht"},
        "footer.imprint": {"en": "Imprint", "de": "Impressum", "fr": "Mentions légales"},
    }
    keys.update({f"shop.item{n:03d}": {"en": f"Item {n}", "de": f"Artikel {n}"} for n in range(60)})
    studio.call("PUT", "/api/l10n/project/site", {"label": "Website", "locales": ["en", "de", "fr"], "keys": keys})


def test_translate_two_missing_german_strings_and_export_po(studio: Studio, new_context: Callable[..., Any],
                                                            tmp_path: Path) -> None:
    from playwright.sync_api import expect

    _site(studio)
    page = open_page(new_context())
    login(page, studio)
    section(page, "Translations").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Translations")
    screenshot(page, "studio-l10n-projects.png")
    page.get_by_role("link", name="Website").click()
    expect(page.locator(".list-total")).to_contain_text("1–50 of 65 keys")
    scripts_ran(page)  # "Show" applies on change through htmx
    page.get_by_label("Show").select_option("de")
    expect(page.locator(".list-total")).to_contain_text("2 keys missing in de")
    expect(page).to_have_url(re.compile(r"/studio/l10n/site\?.*missing=de"))  # reload and back keep the filter
    grid = page.locator("#l10n-grid")
    expect(grid.locator("td.missing")).to_have_count(2)
    screenshot(page, "studio-l10n-grid-missing.png")

    edit = page.get_by_label("de: menu.edit", exact=True)
    edit.fill("Bearbeiten")
    edit.press("Tab")  # leaving the cell saves it
    expect(edit.locator("xpath=ancestor::td")).not_to_have_class("l10n-cell missing")
    expect(grid.locator("td", has=page.get_by_label("de: menu.edit", exact=True)).locator(".cell-status")).to_have_text("Saved")
    file_cell = page.get_by_label("de: menu.file", exact=True)
    file_cell.fill("Datei")
    file_cell.press("Tab")
    expect(grid.locator("td", has=page.get_by_label("de: menu.file", exact=True)).locator(".cell-status")).to_have_text("Saved")
    assert studio.call("GET", "/api/l10n/project/site/de")["menu.file"] == "Datei"

    page.get_by_label("Format").first.select_option("po")
    page.get_by_label("Locale (PO and i18next)").select_option("de")
    with page.expect_download() as info:
        page.get_by_role("button", name="Download").click()
    download = info.value
    assert download.suggested_filename == "site.de.po"
    text = Path(download.path()).read_text(encoding="utf-8")
    assert 'msgid "menu.edit"\nmsgstr "Bearbeiten"' in text
    assert 'msgid "menu.file"\nmsgstr "Datei"' in text
    page.reload()
    expect(page.locator(".list-total")).to_contain_text("No keys missing in de")
    assert_clean(page)


def test_import_shows_progress_and_a_broken_file_is_refused_whole(studio: Studio,
                                                                  new_context: Callable[..., Any],
                                                                  tmp_path: Path) -> None:
    from playwright.sync_api import expect

    _site(studio)
    before = studio.call("GET", "/api/l10n/project/site")
    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/l10n/site?missing=de")  # a short grid: the form in view
    form = page.locator("#l10n-import")
    broken = tmp_path / "site.fr.po"
    broken.write_text('msgid "menu.view"\nmsgstr "Affichage"\n\nmsgid "hello"\nmsgstr "Salut"\nnot po at all\n',
                      encoding="utf-8")
    form.get_by_label("File", exact=True).set_input_files(str(broken))
    form.get_by_label("Format").select_option("po")
    form.get_by_label("Locale (PO").fill("fr")
    form.get_by_role("button", name="Import").click()
    error = form.locator(".import-error")
    expect(error).to_contain_text("Nothing was imported: File is not a valid PO file: line 6")
    screenshot(page, "studio-l10n-import-refused.png")
    assert studio.call("GET", "/api/l10n/project/site") == before

    big = tmp_path / "site.fr.json"
    big.write_text("{" + ",".join(f'"shop.item{n:03d}": "Article {n}"' for n in range(60)) + ', "menu.view": "Affichage"}',
                   encoding="utf-8")
    form.get_by_label("File", exact=True).set_input_files(str(big))
    form.get_by_label("Format").select_option("i18next")
    form.get_by_label("Locale (PO").fill("fr")
    form.get_by_role("button", name="Import").click()
    expect(page.locator("#flash")).to_contain_text("Imported site.fr.json (i18next, fr)")
    assert studio.call("GET", "/api/l10n/project/site/fr")["menu.view"] == "Affichage"
    assert_clean(page)


def test_create_and_delete_a_project_and_the_grid_on_a_phone(studio: Studio,
                                                             new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context(NARROW))
    login(page, studio)
    page.goto(studio.base + "/studio/l10n")
    page.get_by_label("Name (its address").fill("app")
    page.get_by_label("Label (optional").fill("Mobile app")
    page.get_by_label("Locales").fill("en, de")
    page.get_by_role("button", name="Create project").click()
    expect(page.locator("#flash")).to_have_text("Created project app.")
    page.get_by_label("New key").fill("welcome.title")
    page.get_by_role("button", name="Add key").click()
    expect(page.locator("#flash")).to_have_text("Added key welcome.title.")
    scripts_ran(page)  # a cell saves on change through htmx, and Tab skips its Save button (l10n.js)
    cell = page.get_by_label("en: welcome.title", exact=True)
    cell.fill("Welcome")
    cell.press("Tab")
    expect(page.get_by_label("de: welcome.title", exact=True)).to_be_focused()  # Tab goes on to the next one
    expect(page.locator("td.l10n-cell").first.locator(".cell-status")).to_have_text("Saved")
    screenshot(page, "studio-l10n-phone.png")
    page.get_by_role("link", name="All projects").click()
    page.get_by_role("link", name="Delete app").click()
    page.get_by_role("button", name="Delete app and its 1 key").click()
    expect(page.locator("#flash")).to_have_text("Deleted project app and its 1 key.")
    assert_clean(page)
