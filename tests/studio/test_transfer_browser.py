"""Import and export of items in a real browser: from a model's list,
download the filtered list as CSV, then import a CSV with a column to map
and a bad row: the mapping step shows the first rows and their problems,
all-or-nothing refuses the file and names the row, "import the other rows"
stores the good ones with a progress bar; keyboard only for the mapping."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.studio.browsing import (
    Studio,
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
FILE = re.compile(r"^File \(at most")


def _model(studio: Studio) -> None:
    studio.call("PUT", "/api/system/models/books", {
        "name": "books", "type": "collection", "label": "Books",
        "fields": [{"name": "title", "type": "text", "required": True}, {"name": "year", "type": "number"},
                   {"name": "genre", "type": "select", "opts": {"options": ["novel", "essay"]}}]})
    for n, genre in enumerate(["novel", "essay", "novel"]):
        studio.call("POST", "/api/content/item/books", {"data": {"title": f"Book {n}", "year": 2000 + n, "genre": genre}})


def test_export_a_filtered_list_and_import_a_file_with_a_bad_row(
        studio: Studio, new_context: Callable[..., Any], tmp_path: Path) -> None:
    from playwright.sync_api import expect

    _model(studio)
    page = open_page(new_context())
    login(page, studio)
    section(page, "Content").click()
    page.get_by_role("link", name="Books", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Books")
    scripts_ran(page)
    page.get_by_text("Filter", exact=True).click()
    page.get_by_label("Filter as JSON").fill('{"genre": "novel"}')
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#list-results")).to_contain_text("Book 2")
    page.get_by_text("Export these 2 items").click()
    with page.expect_download() as info:
        page.get_by_role("button", name="Download").click()
    download = info.value
    assert download.suggested_filename.startswith("books-") and download.suggested_filename.endswith(".csv")
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text(encoding="utf-8-sig"))))
    assert sorted(r["title"] for r in rows) == ["Book 0", "Book 2"]

    upload = tmp_path / "more-books.csv"
    upload.write_text("Name,year,genre\nDune,1965,novel\n,1970,essay\nWalden,1854,poem\nOn Liberty,1859,essay\n")
    page.get_by_role("link", name="Import…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Import into Books")
    page.get_by_label(FILE).set_input_files(str(upload))
    page.get_by_role("button", name="Next: map the columns").click()
    expect(page.get_by_role("heading", name="2. Columns to fields")).to_be_visible()
    mapping = page.get_by_label("Name", exact=True)
    expect(mapping).to_have_value("")  # not a field's name: left out until mapped
    mapping.focus()
    page.keyboard.press("ArrowDown")  # keyboard only: the select's next option is the first field, title
    expect(mapping).to_have_value("title")
    expect(page.locator(".import-preview")).to_contain_text("title is required")  # read before the mapping
    page.get_by_role("button", name="Check the first rows again").click()
    expect(page.get_by_label("Name", exact=True)).to_have_value("title")  # the mapping chosen is kept
    preview = page.locator(".import-preview")
    expect(preview.locator("tr", has_text="Dune")).to_contain_text("none")
    expect(preview).to_contain_text("must be one of novel, essay")
    screenshot(page, "studio-import-map.png")
    page.get_by_role("button", name="Import", exact=True).click()
    outcome = page.get_by_role("heading", level=2).first
    expect(outcome).to_contain_text("Nothing was imported: 2 of 4 rows are not items of this model")
    problems = page.locator(".import-problems")
    expect(problems).to_contain_text("title")
    expect(problems.locator("tr", has_text="4")).to_contain_text("genre")  # row 4 of the file: the poem
    page.get_by_role("button", name="Import the other rows").click()
    expect(page.get_by_role("heading", level=2).first).to_contain_text("Imported 2 new items; 2 rows were left out")
    screenshot(page, "studio-import-done.png")
    titles = sorted(item["title"] for item in studio.call("GET", "/api/content/items/books"))
    assert titles == ["Book 0", "Book 1", "Book 2", "Dune", "On Liberty"]


def test_a_file_that_is_not_text_is_refused_on_the_first_step(studio: Studio, new_context: Callable[..., Any],
                                                               tmp_path: Path) -> None:
    from playwright.sync_api import expect

    _model(studio)
    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/content/books/import")
    bad = tmp_path / "broken.csv"
    bad.write_bytes(b"title\n\xff\xfe\x00\x01\n")
    page.get_by_label(FILE).set_input_files(str(bad))
    page.get_by_role("button", name="Next: map the columns").click()
    expect(page.get_by_role("alert")).to_contain_text("line 2: the file holds a NUL byte")
    expect(page.get_by_label(FILE)).to_have_attribute("aria-invalid", "true")
