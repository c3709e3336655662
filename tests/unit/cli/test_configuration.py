"""The whole configuration checked before a stack starts: every section and key known, every value of its
type; each problem says where it was set and the nearest known name."""

from __future__ import annotations

from pathlib import Path

import pytest

from overseer_cli import homes
from overseer_cli.supervisor import configuration_models
from overseer_runtime.config import ConfigurationError, check_configuration, load_settings


def problems(env: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigurationError) as refused:
        check_configuration(load_settings(env=env), configuration_models(), env=env)
    return refused.value.problems


def test_the_packaged_defaults_pass() -> None:
    check_configuration(load_settings(env={}), configuration_models(), env={})


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
