"""Hooks: every emitted event is documented in docs/hooks.md, and hooks load
from entry points, `[hooks] modules` and `<data>/hooks/*.py`, with errors
that name the hook."""

from __future__ import annotations

import ast
import asyncio
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from quire import hooks
from quire.app import build_app
from quire.config import load_settings
from quire.errors import ConfigError
from quire.events import Events, Reject
from quire.hooks import hook_files, load_hooks
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "quire"
DOC = ROOT / "docs" / "hooks.md"

KNOWN_EVENTS = {
    "content.item.save.before", "content.item.save.after", "content.item.remove",
    "assets.asset.save", "assets.asset.remove",
    "pages.page.save.before", "pages.page.save.after", "l10n.project.save",
    "inbox.submit.before", "inbox.submit.after",
}


# -- the docs list every event -------------------------------------------------


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` assignments, for emits that name an
    event through a constant."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(
            node.value.value, str
        ):
            out.update((t.id, node.value.value) for t in node.targets if isinstance(t, ast.Name))
    return out


def emitted_events(root: Path = SRC) -> tuple[dict[str, set[str]], list[str]]:
    """Every event emitted in the package at `root` (name -> payload keys of
    all its emits), and the emits whose event name is not a string constant."""
    events: dict[str, set[str]] = {}
    unreadable: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "events.py":  # the bus itself: emit_after passes names on
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        constants = _string_constants(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("emit", "emit_after", "notify")):
                continue
            if not node.args and not node.keywords:
                continue  # a threading.Condition's notify(): an event always has a name
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                name = first.value
            elif isinstance(first, ast.Name) and first.id in constants:
                name = constants[first.id]
            else:
                unreadable.append(f"{path.relative_to(root)}:{node.lineno}")
                continue
            keys = events.setdefault(name, set())
            keys.update(kw.arg for kw in node.keywords if kw.arg is not None)
    return events, unreadable


def documented_events() -> dict[str, str]:
    """Rows of the table under `## Every event` in docs/hooks.md, by event."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Every event\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\|\s*`([a-z0-9_]+(?:\.[a-z0-9_]+)+)`\s*\|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_the_scan_finds_the_known_events_and_reads_every_emit() -> None:
    events, unreadable = emitted_events()
    assert set(events) >= KNOWN_EVENTS, sorted(KNOWN_EVENTS - set(events))
    assert events["content.item.save.before"] == {"model", "item", "is_update", "identity"}
    assert unreadable == [], (
        "name events with a string literal (or a module-level constant) so that "
        f"test_every_emitted_event_is_documented can see them: {unreadable}"
    )


def test_the_scan_sees_multi_line_and_constant_emits_and_flags_dynamic_names(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "service.py").write_text(textwrap.dedent('''
        SAVED = "x.saved"

        async def save(self, name):
            await self.events.emit(
                "x.multi",
                a=1,
                b=2,
            )
            await self.events.emit_after(SAVED, doc=None)
            await self.events.emit(f"x.{name}", doc=None)
    '''), encoding="utf-8")
    events, unreadable = emitted_events(tmp_path)
    assert events == {"x.multi": {"a", "b"}, "x.saved": {"doc"}}
    assert unreadable == ["pkg/service.py:11"]


def test_every_emitted_event_is_documented_with_its_payload() -> None:
    rows = documented_events()
    events, _ = emitted_events()
    missing = sorted(set(events) - set(rows))
    assert missing == [], f"events emitted in src/quire but missing from docs/hooks.md: {missing}"
    for name, keys in sorted(events.items()):
        row = rows[name]
        undocumented = sorted(k for k in keys if f"`{k}`" not in row)
        assert undocumented == [], f"{name}: payload keys missing from its row in docs/hooks.md: {undocumented}"


def test_every_documented_event_is_emitted() -> None:
    events, _ = emitted_events()
    stale = sorted(set(documented_events()) - set(events))
    assert stale == [], f"docs/hooks.md documents events that src/quire does not emit: {stale}"


# -- hook files in <data>/hooks --------------------------------------------------


def write_hook(data_dir: Path, name: str, source: str) -> Path:
    path = data_dir / "hooks" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


@pytest.fixture
def make_app(data_dir: Path) -> Iterator[Any]:
    """Builds apps on `data_dir` the way the `app` fixture does, after the
    test has written its hook files; closes them at the end."""
    built: list[Any] = []

    def make() -> Any:
        application = build_app(load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true"}), Events())
        built.append(application)
        return application

    yield make
    for application in built:
        application.state.quire.close()


def admin_of(application: Any) -> Api:
    key = application.state.quire.auth.create_key("test admin", "admin")["key"]
    return Api(TestClient(application, raise_server_exceptions=False), str(key))


def test_a_hook_file_changes_items_saved_through_the_api(data_dir: Path, make_app: Any) -> None:
    write_hook(data_dir, "stamp.py", '''
        def register(events):
            def stamp(model, item, is_update, identity, **_):
                item["stamp"] = f"{model}:{'update' if is_update else 'create'}"

            events.on("content.item.save.before", stamp)
    ''')
    application = make_app()
    admin = admin_of(application)
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    item = create_item(admin, "posts", {"title": "hello"})
    assert item["stamp"] == "posts:create"
    assert admin.get(f"/api/content/item/posts/{item['_id']}").json()["stamp"] == "posts:create"
    stored = application.state.quire.store.collection("content/posts").get(item["_id"])
    assert stored["stamp"] == "posts:create"


def test_a_hook_file_rejecting_answers_412_with_its_message(data_dir: Path, make_app: Any) -> None:
    write_hook(data_dir, "no_spam.py", '''
        from quire.events import Reject

        def register(events):
            async def refuse(item, **_):
                if "spam" in item.get("title", ""):
                    raise Reject("No spam, please")

            events.on("content.item.save.before", refuse)
    ''')
    admin = admin_of(make_app())
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    response = admin.post("/api/content/item/posts", json={"data": {"title": "spam spam"}})
    assert response.status_code == 412
    assert response.json() == {"error": "No spam, please"}
    assert admin.get("/api/content/items/posts").json() == []


def test_register_with_two_parameters_gets_the_quire_container_and_its_store(
    data_dir: Path, make_app: Any
) -> None:
    write_hook(data_dir, "numbering.py", '''
        def register(events, quire):
            posts = quire.store.collection("content/posts")
            audit = quire.store.collection("site/audit")

            def number(model, item, is_update, **_):
                if not is_update:
                    item["number"] = posts.count() + 1

            async def log(model, item, identity, **_):
                async with quire.store.atomic():
                    audit.insert({"item": item["_id"], "by": identity.key_name})

            events.on("content.item.save.before", number)
            events.on("content.item.save.after", log)
    ''')
    application = make_app()
    admin = admin_of(application)
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    first = create_item(admin, "posts", {"title": "a"})
    second = create_item(admin, "posts", {"title": "b"})
    assert (first["number"], second["number"]) == (1, 2)
    audit = application.state.quire.store.collection("site/audit")
    assert [d["item"] for d in audit.find()] == [first["_id"], second["_id"]]
    assert audit.find_one({"item": first["_id"]})["by"] == "test admin"


def test_hook_files_load_sorted_by_name_and_skip_private_and_other_files(
    data_dir: Path, make_app: Any
) -> None:
    trail = '''
        def register(events):
            def mark(item, **_):
                item.setdefault("trail", []).append(__name__)

            events.on("content.item.save.before", mark)
    '''
    for name in ("c.py", "10_b.py", "a.py", "9_d.py"):  # written out of order
        write_hook(data_dir, name, trail)
    write_hook(data_dir, "_private.py", "raise RuntimeError('must not be loaded')\n")
    write_hook(data_dir, ".hidden.py", "raise RuntimeError('must not be loaded')\n")
    write_hook(data_dir, "notes.txt", "not python\n")
    write_hook(data_dir, "sub/deeper.py", "raise RuntimeError('must not be loaded')\n")
    assert [p.name for p in hook_files(data_dir)] == ["10_b.py", "9_d.py", "a.py", "c.py"]
    admin = admin_of(make_app())
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    item = create_item(admin, "posts", {"title": "x"})
    assert item["trail"] == ["quire_hooks.10_b", "quire_hooks.9_d", "quire_hooks.a", "quire_hooks.c"]
    assert not (data_dir / "hooks" / "__pycache__").exists()


def test_without_a_hooks_folder_nothing_is_loaded(data_dir: Path) -> None:
    assert hook_files(data_dir) == []
    events = Events()
    load_hooks(events, [], data_dir, SimpleNamespace())
    assert not events.has("content.item.save.before")


def test_every_app_runs_a_fresh_copy_of_the_current_file(data_dir: Path, make_app: Any) -> None:
    source = '''
        LOADS = []

        def register(events):
            LOADS.append(events)

            def mark(item, **_):
                item["mark"] = ("{tag}", len(LOADS))

            events.on("content.item.save.before", mark)
    '''
    write_hook(data_dir, "fresh.py", source.replace("{tag}", "A"))
    first = admin_of(make_app())
    put_model(first, "posts", fields=[{"name": "title", "type": "text"}])
    assert create_item(first, "posts", {"title": "x"})["mark"] == ["A", 1]
    # same size and, likely, the same second: no stale cached bytecode
    write_hook(data_dir, "fresh.py", source.replace("{tag}", "B"))
    second = admin_of(make_app())
    assert create_item(second, "posts", {"title": "y"})["mark"] == ["B", 1]
    assert create_item(first, "posts", {"title": "z"})["mark"] == ["A", 1]


def test_the_complete_example_of_the_docs_works(data_dir: Path, make_app: Any) -> None:
    text = DOC.read_text(encoding="utf-8")
    example = re.search(r"```python\n(# <data>/hooks/inbox_rules\.py\n.*?)```", text, re.S)
    assert example is not None
    write_hook(data_dir, "inbox_rules.py", example.group(1))
    quire = make_app().state.quire
    submissions = quire.store.collection("inbox/submissions")
    form = {"_id": "f" * 24, "name": "Contact", "group": ""}

    async def submit(data: dict[str, Any]) -> dict[str, Any]:
        record = {"_id": f"{len(submissions.find()):024x}", "form": form["_id"], "data": data,
                  "attachments": {}, "spam": False, "_created": 1}
        await quire.events.emit("inbox.submit.before", form=form, record=record)
        async with quire.store.atomic():
            submissions.insert(record)
        await quire.events.emit_after("inbox.submit.after", form=form, record=record)
        return record

    with pytest.raises(Reject, match="words we do not accept"):
        asyncio.run(submit({"message": "Win at the CASINO", "email": "a@example.com"}))
    first = asyncio.run(submit({"message": "Hello", "email": "a@example.com"}))
    assert first["data"]["site"] == "www.example.com"
    second = asyncio.run(submit({"message": "Hello again", "email": "a@example.com"}))
    assert "repeat" not in submissions.get(first["_id"])
    assert submissions.get(second["_id"])["repeat"] is True


# -- errors name the hook ----------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def register(events):\n    return (\n", "cannot load: SyntaxError: "),
        ("x = 1\nraise RuntimeError('boom at import')\n",
         "cannot load: RuntimeError: boom at import (line 2)"),
        ("import quire_no_such_module_for_hooks\n",
         "cannot load: ModuleNotFoundError: No module named 'quire_no_such_module_for_hooks' (line 1)"),
        ("def setup(events):\n    pass\n", "has no register(events) function"),
        ("register = 42\n", "register is not a function"),
        ("def register(events):\n    events.on('x', print)\n    raise KeyError('x')\n",
         "register failed: KeyError: 'x' (line 3)"),
        ("async def register(events):\n    pass\n", "register must be a plain function, not async"),
        ("def register(events, quire, more):\n    pass\n",
         "register must take (events) or (events, quire), not (events, quire, more)"),
        ("def register():\n    pass\n", "register must take (events) or (events, quire), not ()"),
    ],
    ids=["syntax", "raises", "import", "no-register", "not-callable", "register-raises", "async",
         "three-params", "no-params"],
)
def test_a_broken_hook_file_is_a_config_error_naming_it(data_dir: Path, source: str, reason: str) -> None:
    path = write_hook(data_dir, "broken.py", source)
    with pytest.raises(ConfigError) as info:
        load_hooks(Events(), [], data_dir, SimpleNamespace())
    assert str(info.value).startswith(f"hook file {path}: {reason}")
    assert "quire_hooks.broken" not in sys.modules


def test_a_broken_hook_file_stops_build_app(data_dir: Path) -> None:
    path = write_hook(data_dir, "broken.py", "def register(events):\n    raise ValueError('bad')\n")
    with pytest.raises(ConfigError, match=re.escape(f"hook file {path}: register failed: ValueError: bad")):
        build_app(load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true"}))


def test_the_cli_exits_2_naming_a_broken_hook_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = write_hook(data, "broken.py", "def register(events):\n    return (\n")
    result = subprocess.run(
        [sys.executable, "-m", "quire", "models", "--data", str(data)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"configuration error: hook file {path}: cannot load: SyntaxError")
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# -- [hooks] modules and entry points ------------------------------------------------


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for hook modules; they leave sys.modules after."""
    folder = tmp_path / "site-packages"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    before = set(sys.modules)
    yield folder
    for name in set(sys.modules) - before:
        if name.startswith("quire_test_"):
            del sys.modules[name]


def write_toml(data_dir: Path, modules: list[str]) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    listed = ", ".join(f'"{m}"' for m in modules)
    (data_dir / "quire.toml").write_text(f"[hooks]\nmodules = [{listed}]\n", encoding="utf-8")


def test_hooks_modules_setting_still_loads_modules(data_dir: Path, module_dir: Path, make_app: Any) -> None:
    (module_dir / "quire_test_site_hooks.py").write_text(textwrap.dedent('''
        def register(events, quire):
            def tag(item, **_):
                item["tagged_by"] = quire.settings.get("hooks", "modules")

            events.on("content.item.save.before", tag)
    '''), encoding="utf-8")
    write_toml(data_dir, ["quire_test_site_hooks"])
    admin = admin_of(make_app())
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    assert create_item(admin, "posts", {"title": "x"})["tagged_by"] == ["quire_test_site_hooks"]


def test_hooks_modules_errors_name_the_module(data_dir: Path, module_dir: Path) -> None:
    (module_dir / "quire_test_raises.py").write_text("raise RuntimeError('no config')\n", encoding="utf-8")
    (module_dir / "quire_test_empty.py").write_text("X = 1\n", encoding="utf-8")
    cases = {
        "quire_test_missing": "setting 'hooks.modules': cannot import quire_test_missing: "
                              "No module named 'quire_test_missing'",
        "quire_test_raises": "setting 'hooks.modules': cannot import quire_test_raises: RuntimeError: no config",
        "quire_test_empty": "setting 'hooks.modules': quire_test_empty: has no register(events) function",
    }
    for module, message in cases.items():
        with pytest.raises(ConfigError) as info:
            load_hooks(Events(), [module], data_dir, SimpleNamespace())
        assert str(info.value) == message


def test_sources_load_in_order_entry_points_then_modules_then_files(
    data_dir: Path, module_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = '''
        def register(events{extra}):
            events.on("x", lambda trail: trail.append("{label}"))
    '''
    (module_dir / "quire_test_ep_module.py").write_text(
        textwrap.dedent(mark.format(extra="", label="entry point module")), encoding="utf-8")
    (module_dir / "quire_test_ep_function.py").write_text(
        textwrap.dedent(mark.format(extra=", quire", label="entry point function")), encoding="utf-8")
    (module_dir / "quire_test_listed.py").write_text(
        textwrap.dedent(mark.format(extra="", label="listed module")), encoding="utf-8")
    write_hook(data_dir, "file.py", mark.format(extra="", label="file"))
    found = [
        EntryPoint("one", "quire_test_ep_module", "quire.hooks"),
        EntryPoint("two", "quire_test_ep_function:register", "quire.hooks"),
    ]
    monkeypatch.setattr(hooks, "installed_hooks", lambda: tuple(found))
    events = Events()
    load_hooks(events, ["quire_test_listed"], data_dir, SimpleNamespace())
    trail: list[str] = []
    asyncio.run(events.emit("x", trail=trail))
    assert trail == ["entry point module", "entry point function", "listed module", "file"]


def test_an_entry_point_that_cannot_load_is_a_config_error(
    data_dir: Path, module_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = EntryPoint("mysite", "quire_test_gone:register", "quire.hooks")
    monkeypatch.setattr(hooks, "installed_hooks", lambda: (broken,))
    with pytest.raises(ConfigError) as info:
        load_hooks(Events(), [], data_dir, SimpleNamespace())
    assert str(info.value) == (
        "entry point 'mysite' (quire_test_gone:register) of group quire.hooks: "
        "cannot load: ModuleNotFoundError: No module named 'quire_test_gone'"
    )
