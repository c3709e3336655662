"""Shell commands are judged on what they would run (parsed invocations), not on how they are spelled."""

from __future__ import annotations

import pytest

from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.policy import PolicyError, PolicyStore, parse_admin_policy
from overseer_firewall.domain.shell import (
    Invocation,
    matching,
    normalise_flags,
    parse_command,
    parse_pattern,
)
from tests.unit.firewall.fw_kernel import admin_from, default_admin

RM_RF = [parse_pattern("rm -r -f")]


def programs(command: str) -> list[tuple[str, ...]]:
    return [inv.argv for inv in parse_command(command).invocations]


def caught(command: str, patterns: list[str] | None = None) -> Invocation | None:
    pats = RM_RF if patterns is None else [parse_pattern(p) for p in patterns]
    return matching(pats, parse_command(command))


# -- the parser ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la", [("ls", "-la")]),
        ("a; b && c || d | e & f", [("a",), ("b",), ("c",), ("d",), ("e",), ("f",)]),
        ("a\nb", [("a",), ("b",)]),
        ("(cd x && ls)", [("cd", "x"), ("ls",)]),
        ("echo 'a; b' \"c && d\"", [("echo", "a; b", "c && d")]),
        ("r''m -rf x", [("rm", "-rf", "x")]),
        ("\\rm x", [("rm", "x")]),
        ("$'\\x72m' x", [("rm", "x")]),
        ("{rm,-rf,x}", [("rm", "-rf", "x")]),
        ("rm${IFS}-rf${IFS}x", [("rm", "-rf", "x")]),
        ("X=rm; $X -rf y", [("rm", "-rf", "y")]),
        ("FOO=1 make", [("make",)]),
        ("ls 2>&1 > out.txt", [("ls",)]),
        ("echo a # ; rm -rf x", [("echo", "a")]),
        ("if true; then ls; fi", [("true",), ("ls",)]),
        ("for f in *; do rm $f; done", [("for", "f", "in", "*"), ("rm", "$f")]),
    ],
)
def test_a_command_splits_into_the_simple_commands_a_shell_would_run(
    command: str, expected: list[tuple[str, ...]]
) -> None:
    assert programs(command) == expected


@pytest.mark.parametrize(
    ("command", "inner"),
    [
        ("echo $(whoami)", ("whoami",)),
        ('echo "$(whoami)"', ("whoami",)),
        ("echo `whoami`", ("whoami",)),
        ("diff <(ls a) b", ("ls", "a")),
        ("sudo -u bob whoami", ("whoami",)),
        ("env -i A=1 whoami", ("whoami",)),
        ("env -S 'whoami -a'", ("whoami", "-a")),
        ("xargs -n 1 -I {} whoami", ("whoami",)),
        ("timeout -s KILL 5 whoami", ("whoami",)),
        ("nice -n 10 nohup setsid whoami", ("whoami",)),
        ("sh -c 'whoami'", ("whoami",)),
        ("bash -euxc 'whoami'", ("whoami",)),
        ("su root -c whoami", ("whoami",)),
        ("eval 'whoami'", ("whoami",)),
        ("find . -name x -exec whoami {} \\;", ("whoami",)),
        ("busybox whoami", ("whoami",)),
        ("echo whoami | sh", ("whoami",)),
    ],
)
def test_wrappers_and_substitutions_add_the_command_they_run(command: str, inner: tuple[str, ...]) -> None:
    assert inner in programs(command)


@pytest.mark.parametrize(
    ("program", "args", "flags", "operands"),
    [
        ("rm", ["-rf", "x"], {"r", "f"}, ("x",)),
        ("rm", ["-fR", "x"], {"r", "f"}, ("x",)),
        ("rm", ["--recursive", "--force", "x"], {"r", "f"}, ("x",)),
        ("rm", ["--rec", "--fo", "x"], {"r", "f"}, ("x",)),  # GNU accepts unambiguous prefixes
        ("rm", ["x", "-r", "-f"], {"r", "f"}, ("x",)),  # and options after operands
        ("rm", ["--", "-rf"], set(), ("-rf",)),  # but not after --
        ("chmod", ["--recursive", "777", "/"], {"R"}, ("777", "/")),
        ("find", [".", "-delete"], {"delete"}, (".",)),
        ("shred", ["-n", "3", "-u", "f"], {"n", "u"}, ("f",)),
    ],
)
def test_options_are_normalised_per_program(
    program: str, args: list[str], flags: set[str], operands: tuple[str, ...]
) -> None:
    assert normalise_flags(program, args) == (frozenset(flags), operands)


@pytest.mark.parametrize(
    ("command", "simple"),
    [
        ("ls -la", True),
        ("ls; pwd", True),
        ("ls $(whoami)", False),
        ("ls > out", False),
        ("$CMD x", False),
        ("/bin/l? x", False),
        ("sh script.sh", False),
        ("echo ls | sh", False),
        ("echo 'open", False),
    ],
)
def test_a_command_is_simple_only_when_everything_it_runs_is_known(command: str, simple: bool) -> None:
    assert parse_command(command).simple is simple


# -- the rm -rf rule, in every spelling ----------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        "rm -rf x",
        "rm -fr x",
        "rm -r -f x",
        "rm -f -r x",
        "rm -Rf x",
        "rm --recursive --force x",
        "rm --force --recursive x",
        "rm --rec --fo x",
        "rm x -rf",
        "rm -r ';' -f x",
        "/bin/rm -rf x",
        "/usr/bin/rm -rf x",
        "\\rm -rf x",
        "r''m -rf x",
        '"rm" "-rf" x',
        'rm -r""f x',
        "$'rm' -rf x",
        "{rm,-rf,x}",
        "rm${IFS}-rf${IFS}x",
        "X=rm; $X -rf x",
        "F=-rf; rm $F x",
        "sudo rm -rf /",
        "sudo -u root rm -rf /",
        "doas rm -rf x",
        "xargs rm -rf",
        "xargs -0 -n 1 rm -rf",
        "find . -exec rm -rf {} +",
        "env rm -rf x",
        "env -i PATH=/bin rm -rf x",
        "nice -n 19 rm -rf x",
        "timeout 5 rm -rf x",
        "nohup rm -rf x &",
        "setsid rm -rf x",
        "command rm -rf x",
        "exec rm -rf x",
        "busybox rm -rf x",
        "sh -c 'rm -rf x'",
        'bash -c "rm -fr x"',
        "eval 'rm -rf x'",
        "echo 'rm -rf x' | sh",
        "echo $(rm -rf x)",
        "echo `rm -rf x`",
        'echo "$(rm -rf x)"',
        "ls; rm -rf x",
        "ls && rm -rf x",
        "ls || rm -rf x",
        "ls | rm -rf x",
        "ls\nrm -rf x",
        "(rm -rf x)",
        "{ rm -rf x; }",
        "if true; then rm -rf x; fi",
        "ls \\\n; rm -rf x",
    ],
)
def test_every_spelling_of_rm_recursive_force_is_caught(command: str) -> None:
    found = caught(command)
    assert found is not None
    assert found.program == "rm"


@pytest.mark.parametrize(
    "command",
    [
        "rm x",
        "rm -f x",
        "rm -r x",
        "rm -- -rf",
        "echo rm -rf x",
        "echo 'rm -rf x'",
        "git commit -m 'rm -rf'",
        "grep -rf patterns.txt .",
        "ls -rf",
        "rmdir -p x",
        "ls # rm -rf x",
    ],
)
def test_lookalikes_that_do_not_remove_recursively_and_forcibly_are_not_caught(command: str) -> None:
    assert caught(command) is None


@pytest.mark.parametrize(
    ("pattern", "command", "matches"),
    [
        ("dd of=/dev/*", "dd if=/dev/zero of=/dev/sda bs=1M", True),
        ("dd of=/dev/*", "dd if=/dev/zero of=disk.img", False),
        ("mkfs*", "mkfs.ext4 /dev/sda1", True),
        ("mkfs*", "/sbin/mkfs -t ext4 /dev/sda1", True),
        ("rm -r /*", "rm -r /home", True),
        ("rm -r /*", "rm -r build", False),
        ("chmod -R /", "chmod --recursive 777 /", True),
        ("chmod -R /", "chmod -R 755 public", False),
        ("sudo", "echo x && sudo reboot", True),
        ("rm", "/bin/r? x", True),  # the shell may expand the glob to rm
    ],
)
def test_patterns_match_program_options_and_operand_globs(pattern: str, command: str, matches: bool) -> None:
    assert (caught(command, [pattern]) is not None) is matches


@pytest.mark.parametrize("pattern", ["", "ls; rm", "rm $(x)", "a | b", "'open"])
def test_a_pattern_is_one_program_with_its_options_and_operands(pattern: str) -> None:
    with pytest.raises(ValueError):
        parse_pattern(pattern)


# -- in the policy -------------------------------------------------------------------------------
def judge(store: PolicyStore, command: str) -> tuple[Level, bool]:
    judgement = store.judge("shell.run", store.catalogue.get("shell.run"), {"command": command})
    return judgement.level, judgement.denied


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "rm -fr ~",
        "rm -r -f .",
        "rm --recursive --force /srv",
        "/bin/rm -rf x",
        "sudo rm -rf /",
        "ls | xargs rm -rf",
        "sh -c 'rm -fr x'",
        "rm -r /etc",
        "sudo ls",
        "mkfs.ext4 /dev/sda",
        "dd if=/dev/zero of=/dev/sda",
        "shred -u secrets.txt",
    ],
)
def test_the_default_policy_denies_destructive_commands_in_any_spelling(command: str) -> None:
    assert judge(PolicyStore(default_admin()), command) == (Level.APPROVE, True)


@pytest.mark.parametrize("command", ["ls -la", "rm notes.txt", "rm -r build", "cat a | grep b", "make test"])
def test_the_default_policy_leaves_ordinary_commands_to_their_approval(command: str) -> None:
    assert judge(PolicyStore(default_admin()), command) == (Level.APPROVE, False)


LOWERING = """
[[rules]]
tool = "shell.run"
invocations = ["sudo"]
deny = true

[[rules]]
tool = "shell.run"
invocations = ["ls", "pwd", "cat"]
level = "NOTIFY"
"""


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la", (Level.NOTIFY, False)),
        ("ls; pwd", (Level.NOTIFY, False)),
        ("cat a | ls", (Level.NOTIFY, False)),
        ("ls; rm -rf ~", (Level.APPROVE, False)),
        ("ls $(whoami)", (Level.APPROVE, False)),
        ("ls > listing.txt", (Level.APPROVE, False)),
        ("$X", (Level.APPROVE, False)),
        ("echo ls | sh", (Level.APPROVE, False)),
        ("ls && sudo reboot", (Level.APPROVE, True)),
    ],
)
def test_an_invocation_rule_lowers_only_when_every_program_it_runs_matches(
    command: str, expected: tuple[Level, bool]
) -> None:
    assert judge(PolicyStore(admin_from(LOWERING)), command) == expected


def test_invocation_rules_round_trip_through_the_policy_document() -> None:
    admin = admin_from(LOWERING)
    assert parse_admin_policy(admin.as_dict(), version=1).rules == admin.rules
    assert admin.as_dict()["rules"][0]["invocations"] == ["sudo"]


def test_a_policy_with_a_malformed_invocation_pattern_is_refused() -> None:
    with pytest.raises(PolicyError, match=r"rules\[0\]\.invocations"):
        admin_from('[[rules]]\ntool = "shell.run"\ninvocations = ["ls; rm"]\ndeny = true\n')
