"""Typed configuration sections: overseer.toml's defaults, overridden by the environment with the type
of their field; a key missing from the configuration, or unknown to its section, is a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from overseer_events.subjects import DEFAULT_NAMESPACE, Subjects
from overseer_runtime.config import ConfigurationError, NatsSettings, Section, load_settings


def test_every_platform_section_of_overseer_toml_is_valid_as_it_ships(tmp_path: Path) -> None:
    settings = load_settings(env={"OVERSEER_HOME": str(tmp_path)})

    assert settings.overseer.home == str(tmp_path.resolve())
    assert settings.nats == NatsSettings.model_validate(settings.section("nats"))
    assert settings.telemetry.exporter == settings.section("telemetry")["exporter"]


def test_an_environment_override_is_read_with_the_type_of_its_field(tmp_path: Path) -> None:
    settings = load_settings(
        env={
            "OVERSEER_HOME": str(tmp_path),
            "OVERSEER_NATS__PULL_BATCH": "64",
            "OVERSEER_NATS__HEARTBEAT_SECONDS": "2",
            "OVERSEER_TELEMETRY__EXPORTER": "file",
        }
    )

    assert settings.nats.pull_batch == 64
    assert isinstance(settings.nats.heartbeat_seconds, float)
    assert settings.nats.heartbeat_seconds == 2.0
    assert settings.telemetry.exporter == "file"


def test_a_service_section_overridden_by_the_environment_is_typed_by_the_service_s_model(
    tmp_path: Path,
) -> None:
    class ColSettings(Section):
        col_enabled: bool

    shipped = load_settings(env={"OVERSEER_HOME": str(tmp_path)})
    switched_off = load_settings(env={"OVERSEER_HOME": str(tmp_path), "OVERSEER_COL__COL_ENABLED": "false"})

    assert shipped.typed("col", ColSettings).col_enabled is True
    assert switched_off.typed("col", ColSettings).col_enabled is False


def test_a_key_missing_from_the_configuration_is_an_error_naming_the_section_and_the_key(
    tmp_path: Path,
) -> None:
    class NeedsMore(BaseModel):
        model_config = ConfigDict(frozen=True)
        pull_batch: int
        not_in_overseer_toml: float

    settings = load_settings(env={"OVERSEER_HOME": str(tmp_path)})

    with pytest.raises(ValueError, match=r"\[nats\] of the configuration") as missing:
        settings.typed("nats", NeedsMore)
    assert "not_in_overseer_toml" in str(missing.value)
    assert "Field required" in str(missing.value)


def test_a_key_a_platform_section_does_not_know_is_refused_not_ignored(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"nats\.pull_bacth: unknown setting") as unknown:
        load_settings(env={"OVERSEER_HOME": str(tmp_path), "OVERSEER_NATS__PULL_BACTH": "64"})
    assert "did you mean 'pull_batch'?" in str(unknown.value)


def test_an_override_that_does_not_fit_its_field_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"nats\.pull_batch: ") as wrong:
        load_settings(env={"OVERSEER_HOME": str(tmp_path), "OVERSEER_NATS__PULL_BATCH": "lots"})
    assert "not 'lots'" in str(wrong.value)


def test_the_namespace_names_the_stack_s_subjects_and_an_empty_one_is_the_default(tmp_path: Path) -> None:
    staging = load_settings(env={"OVERSEER_HOME": str(tmp_path), "OVERSEER_NATS__NAMESPACE": "staging"})
    unnamed = load_settings(env={"OVERSEER_HOME": str(tmp_path), "OVERSEER_NATS__NAMESPACE": ""})

    assert staging.subjects == Subjects("staging")
    assert unnamed.subjects == Subjects(DEFAULT_NAMESPACE)
