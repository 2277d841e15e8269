"""`[server] proxy_hops`, and the deprecated `[inbox] trust_forwarded_for`
read as one hop."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from quire.config import load_settings, log_deprecations
from quire.errors import ConfigError


def test_proxy_hops_defaults_to_zero_the_peer(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={})
    assert settings.get("server", "proxy_hops") == 0
    assert settings.deprecations == []


def test_proxy_hops_from_file_and_environment(tmp_path: Path) -> None:
    (tmp_path / "quire.toml").write_text("[server]\nproxy_hops = 2\n")
    assert load_settings(tmp_path, env={}).get("server", "proxy_hops") == 2
    assert load_settings(tmp_path, env={"QUIRE_SERVER_PROXY_HOPS": "1"}).get("server", "proxy_hops") == 1


@pytest.mark.parametrize(
    ("toml", "env", "message"),
    [
        ("[server]\nproxy_hops = -1\n", {}, "setting 'server.proxy_hops' must be between 0 and 16"),
        ("[server]\nproxy_hops = 17\n", {}, "setting 'server.proxy_hops' must be between 0 and 16"),
        ("[server]\nproxy_hops = true\n", {}, "setting 'server.proxy_hops' must be an integer"),
        ('[server]\nproxy_hops = "1"\n', {}, "setting 'server.proxy_hops' must be an integer"),
        ("", {"QUIRE_SERVER_PROXY_HOPS": "one"}, "QUIRE_SERVER_PROXY_HOPS must be an integer"),
        ("[inbox]\ntrust_forwarded_for = 1\n", {}, "setting 'inbox.trust_forwarded_for' must be true or false"),
    ],
)
def test_bad_proxy_hops_stop_with_a_message_naming_the_key(tmp_path: Path, toml: str, env: dict[str, str],
                                                             message: str) -> None:
    (tmp_path / "quire.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace(".", r"\.")):
        load_settings(tmp_path, env=env)


def test_trust_forwarded_for_is_read_as_one_hop_and_reported(tmp_path: Path) -> None:
    (tmp_path / "quire.toml").write_text("[inbox]\ntrust_forwarded_for = true\n")
    settings = load_settings(tmp_path, env={})
    assert settings.get("server", "proxy_hops") == 1
    assert len(settings.deprecations) == 1
    assert "'inbox.trust_forwarded_for' is deprecated" in settings.deprecations[0]
    assert "'server.proxy_hops' = 1" in settings.deprecations[0]
    from_env = load_settings(tmp_path / "other", env={"QUIRE_INBOX_TRUST_FORWARDED_FOR": "true"})
    assert from_env.get("server", "proxy_hops") == 1 and len(from_env.deprecations) == 1


@pytest.mark.parametrize("hops", [0, 2])
def test_an_explicit_proxy_hops_wins_over_trust_forwarded_for(tmp_path: Path, hops: int) -> None:
    (tmp_path / "quire.toml").write_text(f"[server]\nproxy_hops = {hops}\n[inbox]\ntrust_forwarded_for = true\n")
    settings = load_settings(tmp_path, env={})
    assert settings.get("server", "proxy_hops") == hops
    assert len(settings.deprecations) == 1 and "ignored" in settings.deprecations[0]
    env = {"QUIRE_SERVER_PROXY_HOPS": str(hops), "QUIRE_INBOX_TRUST_FORWARDED_FOR": "true"}
    assert load_settings(tmp_path / "other", env=env).get("server", "proxy_hops") == hops
    overridden = load_settings(tmp_path / "other", env={"QUIRE_INBOX_TRUST_FORWARDED_FOR": "true"},
                               overrides={"server": {"proxy_hops": hops}})
    assert overridden.get("server", "proxy_hops") == hops


def test_trust_forwarded_for_false_changes_nothing_but_is_reported(tmp_path: Path) -> None:
    (tmp_path / "quire.toml").write_text("[inbox]\ntrust_forwarded_for = false\n")
    settings = load_settings(tmp_path, env={})
    assert settings.get("server", "proxy_hops") == 0
    assert len(settings.deprecations) == 1 and "no effect" in settings.deprecations[0]


def test_deprecations_are_log_lines_not_python_warnings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "quire.toml").write_text("[inbox]\ntrust_forwarded_for = true\n")
    with caplog.at_level(logging.WARNING, "quire.config"):
        settings = load_settings(tmp_path, env={})  # -W error (pytest's filterwarnings) would raise here
        assert caplog.records == []  # loading (done again by every worker) logs nothing
        log_deprecations(settings)
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "trust_forwarded_for" in caplog.records[0].getMessage()
