"""Settings: defaults < quire.toml < QUIRE_* environment, validated at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from quire.config import load_settings
from quire.errors import ConfigError


def test_defaults_apply_without_a_file(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={})
    assert settings.get("server", "port") == 8080
    assert settings.get("api", "max_body_bytes") == 10 * 1024 * 1024
    assert settings.get("api", "max_json_depth") == 64


def test_file_overrides_defaults_and_environment_overrides_file(tmp_path: Path) -> None:
    (tmp_path / "quire.toml").write_text("[server]\nport = 9000\nworkers = 3\n")
    settings = load_settings(tmp_path, env={"QUIRE_SERVER_PORT": "9100"})
    assert settings.get("server", "port") == 9100
    assert settings.get("server", "workers") == 3


def test_config_option_points_at_another_file(tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text('[api]\ncors_origins = ["https://example.org"]\n')
    assert load_settings(tmp_path, other, env={}).get("api", "cors_origins") == ["https://example.org"]


@pytest.mark.parametrize(
    ("toml", "env", "message"),
    [
        ("[server]\nprot = 1\n", {}, "unknown setting 'server.prot'"),
        ("[nope]\na = 1\n", {}, "unknown section [nope]"),
        ('[server]\nport = "eighty"\n', {}, "setting 'server.port' must be an integer"),
        ("[server]\nport = 0\n", {}, "'server.port' must be between 1 and 65535"),
        ("", {"QUIRE_SERVER_PORT": "x"}, "QUIRE_SERVER_PORT must be an integer"),
        ("", {"QUIRE_SERVER_QUIET": "maybe"}, "QUIRE_SERVER_QUIET must be true or false"),
        ("[server\n", {}, "quire.toml"),
    ],
)
def test_bad_settings_stop_with_a_message_naming_the_key(
    tmp_path: Path, toml: str, env: dict[str, str], message: str
) -> None:
    (tmp_path / "quire.toml").write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path, env=env)
    assert message in str(info.value)


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path, tmp_path / "missing.toml", env={})
