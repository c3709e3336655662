"""The whole configuration read as one model (pydantic-settings): every section and key known, every value of
its type, or no settings at all; each problem says where it was set and the nearest known name."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from overseer_cli import homes
from overseer_cli.main import app
from overseer_runtime.config import ConfigurationError, load_settings, section_models


def problems(env: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigurationError) as refused:
        load_settings(env=env)
    return refused.value.problems


def test_the_packaged_defaults_pass_and_every_section_has_a_model() -> None:
    settings = load_settings(env={})
    assert sorted(settings.raw) == sorted(section_models())


def test_a_misspelt_key_names_the_variable_that_set_it_and_the_key_meant() -> None:
    assert problems({"OVERSEER_GATEWAY__PROT": "9000"}) == [
        "gateway.prot: unknown setting (set by OVERSEER_GATEWAY__PROT); did you mean 'port'?"
    ]


def test_a_value_of_the_wrong_type_is_refused_with_the_value() -> None:
    [problem] = problems({"OVERSEER_GATEWAY__PORT": "abc"})
    assert problem.startswith("gateway.port: ")
    assert "not 'abc' (set by OVERSEER_GATEWAY__PORT)" in problem


def test_a_misspelt_section_names_the_section_meant() -> None:
    [problem] = problems({"OVERSEER_GATWAY__PORT": "9000"})
    assert problem.startswith("gatway: unknown section")
    assert "did you mean 'gateway'?" in problem


def test_a_misspelt_key_of_a_nested_table_names_the_key_meant() -> None:
    [problem] = problems({"OVERSEER_TOOLS__EMAIL__HOTS": "smtp.example.com"})
    assert (
        problem
        == "tools.email.hots: unknown setting (set by OVERSEER_TOOLS__EMAIL__HOTS); did you mean 'host'?"
    )


def test_every_problem_is_listed_at_once() -> None:
    assert len(problems({"OVERSEER_GATEWAY__PROT": "1", "OVERSEER_NATS__REPLICAS": "three"})) == 2


def test_a_misspelt_key_in_the_user_s_file_is_refused_as_set_in_a_file(tmp_path: Path) -> None:
    (tmp_path / "overseer.toml").write_text("[executor]\ntool_timeout_secs = 5\n")
    [problem] = problems({"OVERSEER_HOME": str(tmp_path)})
    assert problem.startswith("executor.tool_timeout_secs: unknown setting (set in a configuration file)")
    assert "did you mean 'tool_timeout_seconds'?" in problem


def test_a_list_or_a_table_is_read_from_the_environment_as_json() -> None:
    settings = load_settings(env={"OVERSEER_TOOLS__READABLE_PATHS": '["/srv/docs", "/tmp"]'})
    assert settings.section("tools")["readable_paths"] == ("/srv/docs", "/tmp")


def test_a_command_says_the_configuration_s_problems_instead_of_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OVERSEER_HOME", str(tmp_path))
    monkeypatch.setenv("OVERSEER_GATEWAY__PROT", "9000")
    result = CliRunner().invoke(app, ["status"])
    said = " ".join(result.output.split())  # as wrapped to the terminal's width
    assert result.exit_code == 2
    assert "gateway.prot: unknown setting (set by OVERSEER_GATEWAY__PROT); did you mean 'port'?" in said


def test_a_command_finds_the_recorded_home_but_a_new_stack_starts_in_this_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere, recorded_home = tmp_path / "elsewhere", tmp_path / "stack-home"
    elsewhere.mkdir()
    recorded_home.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("OVERSEER_HOME", raising=False)
    monkeypatch.chdir(elsewhere)
    homes.record(recorded_home)
    assert homes.settle().path == recorded_home.resolve()
    monkeypatch.delenv("OVERSEER_HOME")
    assert homes.settle(starting=True).path == elsewhere / ".overseer"
    monkeypatch.setenv("OVERSEER_HOME", str(tmp_path / "chosen"))
    assert homes.settle(starting=True).path == tmp_path / "chosen"
