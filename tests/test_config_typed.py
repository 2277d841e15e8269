"""Settings are typed: a frozen section object per [section], read as
attributes, validated however it is built; the by-key view stays for hooks."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, replace
from pathlib import Path
from typing import ClassVar

import pytest

from quire import config
from quire.config import AssetSettings, ServerSettings, Settings, SmtpSettings, load_settings
from quire.errors import ConfigError
from quire.sections import Section, setting
from quire.sso.settings import SsoSettings


def test_sections_are_attributes_with_the_types_of_their_fields(tmp_path: Path) -> None:
    (tmp_path / "quire.toml").write_text(
        '[smtp]\nhost = "mail.example.com"\nfrom = "Site <site@example.com>"\n'
        '[api]\ncors_origins = ["https://a.example"]\n'
        '[sso]\nloginText = "Sign in"\npkce = "plain"\n')
    settings = load_settings(tmp_path, env={"QUIRE_SERVER_PORT": "9000", "QUIRE_HOOKS_MODULES": "a.b, c"})
    assert isinstance(settings.smtp, SmtpSettings)
    assert settings.smtp.from_address == "Site <site@example.com>"
    assert settings.server.port == 9000
    assert settings.api.cors_origins == ("https://a.example",)
    assert settings.hooks.modules == ("a.b", "c")
    assert settings.sso.login_text == "Sign in"
    assert settings.sso.pkce_method == "plain"
    assert settings.section(AssetSettings) is settings.assets


def test_the_by_key_view_for_hooks_is_read_only_and_plain(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={"QUIRE_SMTP_FROM": "x@example.com"})
    assert settings.get("smtp", "from") == "x@example.com"
    assert settings.values["sso"]["loginText"] == "Login via OAuth"
    assert settings.get("api", "cors_methods") == list(config.CORS_METHODS)  # a list, as before
    with pytest.raises(TypeError):
        settings.values["server"]["port"] = 1  # type: ignore[index]
    settings.values["api"]["cors_origins"].append("https://evil.example")
    assert settings.api.cors_origins == ("*",)  # the view holds copies


def test_sections_are_frozen_and_validated_however_built(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={})
    with pytest.raises(FrozenInstanceError):
        settings.server.port = 1  # type: ignore[misc]
    with pytest.raises(ConfigError, match=r"^setting 'server.port' must be between 1 and 65535$"):
        replace(settings.server, port=0)
    with pytest.raises(ConfigError, match="'smtp.ssl' and 'smtp.starttls' exclude each other"):
        SmtpSettings(ssl=True)
    assert Settings(tmp_path).server == ServerSettings()  # every section at its defaults


def test_secrets_stay_out_of_the_repr(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={"QUIRE_SMTP_PASSWORD": "hunter2", "QUIRE_SSO_CLIENT_SECRET": "s3cret"})
    assert settings.smtp.password == "hunter2"
    assert "hunter2" not in repr(settings.smtp) and "s3cret" not in repr(settings.sso)


def test_the_attribute_name_is_not_a_key_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "quire.toml").write_text('[smtp]\nfrom_address = "x@example.com"\n')
    with pytest.raises(ConfigError, match="unknown setting 'smtp.from_address'"):
        load_settings(tmp_path, env={})


@dataclass(frozen=True)
class GreetingSettings(Section):
    NAME: ClassVar[str] = "greeting"
    text: str = "hello"
    times: int = setting(1, between=(1, 3))


def test_a_module_can_register_its_own_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "SECTIONS", dict(config.SECTIONS))
    config.register_section(GreetingSettings)
    (tmp_path / "quire.toml").write_text('[greeting]\ntext = "hi"\n')
    settings = load_settings(tmp_path, env={"QUIRE_GREETING_TIMES": "2"})
    assert settings.section(GreetingSettings) == GreetingSettings(text="hi", times=2)
    assert settings.get("greeting", "times") == 2
    with pytest.raises(ConfigError, match="'greeting.times' must be between 1 and 3"):
        load_settings(tmp_path, env={"QUIRE_GREETING_TIMES": "4"})

    @dataclass(frozen=True)
    class Impostor(Section):
        NAME: ClassVar[str] = "sso"

    with pytest.raises(ValueError, match=r"\[sso\] is taken by SsoSettings"):
        config.register_section(Impostor)
    assert config.SECTIONS["sso"] is SsoSettings
