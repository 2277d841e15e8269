"""`quire l10n export|import`, run in-process (and once as a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from quire.cli import main
from tests.conftest import Api
from tests.l10n.conftest import SITE
from tests.l10n.test_formats import HAND_WRITTEN_PO


def run(data: Path, *args: str) -> int:
    return main(["l10n", *args, "--data", str(data)])


def test_export_json_to_stdout(admin: Api, site: dict[str, Any], data_dir: Path,
                               capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert run(data_dir, "export", "site") == 0
    out = capsysbinary.readouterr().out
    assert json.loads(out) == {"name": "site", "label": "Website", "locales": SITE["locales"],
                               "keys": site["keys"]}


def test_export_one_locale_to_a_file(admin: Api, site: dict[str, Any], data_dir: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "de.po"
    assert run(data_dir, "export", "site", "--format", "po", "--locale", "de", "--out", str(target)) == 0
    assert capsys.readouterr().out.strip() == f"Wrote {target}"
    assert 'msgid "hello"\nmsgstr "Hallo"' in target.read_text()


def test_export_every_locale_into_a_directory(admin: Api, site: dict[str, Any], data_dir: Path,
                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "out" / "po"
    assert run(data_dir, "export", "site", "--format", "i18next", "--out", str(folder)) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["site.de.json", "site.en.json", "site.pt-BR.json"]
    assert json.loads((folder / "site.de.json").read_text())["hello"] == "Hallo"
    assert capsys.readouterr().out.startswith(f"Wrote 3 files to {folder}")


def test_export_every_locale_needs_out(admin: Api, site: dict[str, Any], data_dir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert run(data_dir, "export", "site", "--format", "po") == 1
    assert capsys.readouterr().err.startswith("error: --out DIR is needed")


def test_export_of_a_missing_project_fails(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(data_dir, "export", "nope") == 1
    assert capsys.readouterr().err == "error: Project 'nope' not found\n"


def test_export_directory_then_import_into_another_data_dir(
    admin: Api, site: dict[str, Any], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "files"
    assert run(data_dir, "export", "site", "--format", "po", "--out", str(folder)) == 0
    other = tmp_path / "other"
    files = sorted(str(p) for p in folder.iterdir())
    assert run(other, "import", *files) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 + 3  # the export's summary, then one line per file
    assert lines[-1].startswith(f"Imported {files[-1]} (po) into project site: 6 keys")
    # read it back through the CLI of the other data dir
    assert run(other, "export", "site") == 0
    copied = json.loads(capsys.readouterr().out)
    assert copied["keys"] == site["keys"]
    assert sorted(copied["locales"]) == sorted(SITE["locales"])


def test_import_guesses_format_project_and_locale(admin: Api, site: dict[str, Any], data_dir: Path,
                                                  tmp_path: Path) -> None:
    i18n = tmp_path / "site.fr.json"
    i18n.write_text(json.dumps({"hello": "Bonjour", "menu": {"edit": "Éditer"}}))
    po = tmp_path / "app.po"
    po.write_text(HAND_WRITTEN_PO)
    own = tmp_path / "anything.json"
    own.write_text(json.dumps({"name": "third", "locales": ["it"], "keys": {"ciao": {"it": "Ciao"}}}))
    assert run(data_dir, "import", str(i18n), str(po), str(own)) == 0
    fr = admin.get("/api/l10n/project/site/fr").json()
    assert fr["hello"] == "Bonjour" and fr["menu.edit"] == "Éditer"
    assert admin.get("/api/l10n/project/app/de-DE").json()["hello"] == "Hallo"
    assert admin.get("/api/l10n/project/third/it").json() == {"ciao": "Ciao"}


def test_import_options_override_the_guesses(admin: Api, data_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "strings.txt"
    path.write_text(json.dumps({"a": "b"}))
    assert run(data_dir, "import", str(path), "--format", "i18next", "--project", "web", "--locale", "nl") == 0
    assert admin.get("/api/l10n/project/web/nl").json() == {"a": "b"}


def test_import_is_all_or_nothing(admin: Api, data_dir: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "web.en.json"
    good.write_text(json.dumps({"a": "b"}))
    bad = tmp_path / "web.de.json"
    bad.write_text(json.dumps({"a": 1}))
    assert run(data_dir, "import", str(good), str(bad)) == 1
    assert capsys.readouterr().err == "error: Value of 'a' must be a string\n"
    assert admin.get("/api/l10n/projects").json() == []


@pytest.mark.parametrize(("name", "content", "message"), [
    ("web.json", '{"a": "b"}', "cannot tell the locale of"),
    ("web.csv", "a,b", "cannot tell the format of"),
    ("web.en.json", "{nope", "is not valid JSON"),
])
def test_import_explains_what_it_cannot_guess(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    assert run(data_dir, "import", str(path)) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


def test_import_of_a_missing_file_fails(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(data_dir, "import", str(tmp_path / "none.po")) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot read {tmp_path / 'none.po'}")


def test_l10n_commands_have_help() -> None:
    for args in (["l10n", "--help"], ["l10n", "export", "--help"], ["l10n", "import", "--help"]):
        result = subprocess.run([sys.executable, "-m", "quire", *args], capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stderr
        assert "usage: quire l10n" in result.stdout
        if len(args) == 3:
            assert "--data" in result.stdout and "--format" in result.stdout
