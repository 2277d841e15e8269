"""The benchmarks' PostgreSQL and several-instances parts (bench/pgdata.py,
bench/run.py --backends, bench/instances.py): what they build on, checked
without running any load."""

from __future__ import annotations

import smtplib
import sys
import threading
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import instances  # noqa: E402
import pgdata  # noqa: E402
import run  # noqa: E402


def _docs(quire: Any, name: str) -> dict[str, dict[str, Any]]:
    return {d["_id"]: d for d in quire.store.collection(name).find()}


def test_load_copies_every_document_and_the_models_into_postgresql(tmp_path: Path, pg_url: str) -> None:
    sqlite_dir = tmp_path / "data"
    run.generate(sqlite_dir, tmp_path / "ids.txt", posts=40, authors=4, pictures=0.5)
    loaded = pgdata.load(sqlite_dir, tmp_path / "pg", pg_url, run.MODELS)
    assert loaded["counts"] == {"assets/assets": 4, "content/authors": 4, "content/posts": 40}
    source = pgdata.open_quire(sqlite_dir, {})
    target = pgdata.open_quire(tmp_path / "pg", pgdata.store_env(pg_url))
    try:
        assert type(target.store).__name__ == "PostgresStore"
        for name in pgdata.COPIED:
            assert _docs(target, name) == _docs(source, name)
        assert {m.name for m in target.models.all()} == {m.name for m in source.models.all()}
        assert target.models.indexes("posts")  # the declared indexes, built by PostgreSQL's store
    finally:
        source.close()
        target.close()


def test_rotate_key_leaves_one_key_of_that_name(tmp_path: Path, pg_url: str) -> None:
    env = pgdata.store_env(pg_url)
    first = pgdata.rotate_key(tmp_path, env, "bench x")
    second = pgdata.rotate_key(tmp_path, env, "bench x")
    assert first != second
    quire = pgdata.open_quire(tmp_path, env)
    try:
        assert [k["name"] for k in quire.auth.list_keys()].count("bench x") == 1
    finally:
        quire.close()


def test_backends_option_orders_sqlite_first_and_refuses_others() -> None:
    assert run.parse_args([]).backends == ["sqlite"]
    assert run.parse_args(["--backends", "postgresql, SQLite"]).backends == ["sqlite", "postgresql"]
    with pytest.raises(SystemExit):
        run.parse_args(["--backends", "mysql"])


def _outcome(name: str, rps: float) -> run.Outcome:
    result = run.WrkResult(rps, {50: 1.0, 99: 5.0}, int(rps), "1s", "1MB", {}, 0)
    return run.Outcome(run.Scenario(name, "/", lambda _: None), result)


def test_backends_table_puts_both_side_by_side_with_their_ratio() -> None:
    sqlite = run.BackendRun("SQLite", Path("a.log"), [_outcome("page", 4000), _outcome("item", 5000)])
    pg = run.BackendRun("PostgreSQL", Path("b.log"), [_outcome("page", 1000)])
    table = run.render_backends([sqlite, pg]).splitlines()
    assert table[0].startswith("| scenario | SQLite req/s | p50 | p99 | PostgreSQL req/s |")
    assert table[2].endswith("| 0.25 |")
    assert "**error**: not run" in table[3]  # PostgreSQL never got to the second scenario


def test_no_cpu_share_asked_means_no_group() -> None:
    limit = instances.CpuLimit(0)
    assert limit.root is None and limit.group("x") is None
    assert "no CPU limit" in limit.text


def test_nginx_config_names_every_instance(tmp_path: Path) -> None:
    conf = instances.Nginx(tmp_path, [10001, 10002, 10003], 1).config()
    assert all(f"server 127.0.0.1:{p};" in conf for p in (10001, 10002, 10003))
    assert "proxy_add_x_forwarded_for" in conf


def _mail(message_id: str) -> EmailMessage:
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = "a@example.com", "b@example.com", "hi"
    mail["Message-ID"] = message_id
    mail.set_content("hello")
    return mail


def test_mailbox_counts_acknowledged_messages_and_never_a_stalled_one() -> None:
    box = instances.Mailbox()
    with instances.smtp_server(box) as port:
        with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
            client.send_message(_mail("<one@example.com>"))
            client.send_message(_mail("<one@example.com>"))
        box.stall_next = True
        refused: list[BaseException] = []

        def send() -> None:
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
                    client.send_message(_mail("<two@example.com>"))
            except smtplib.SMTPException as exc:
                refused.append(exc)

        sender = threading.Thread(target=send)
        sender.start()
        assert box.stalled.wait(30)
        assert box.stalled_id == "<two@example.com>"
        box.released.set()
        sender.join(30)
    assert box.received["<one@example.com>"] == 2
    assert box.received["<two@example.com>"] == 0
    assert box.distinct({"<one@example.com>", "<two@example.com>"}) == 1
    assert refused and isinstance(refused[0], smtplib.SMTPDataError)
