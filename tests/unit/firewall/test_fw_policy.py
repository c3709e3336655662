"""PolicyStore: admin layer from TOML with argument-aware rules, event-sourced user layer, stricter wins."""

from __future__ import annotations

import pytest

from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.policy import (
    PolicyError,
    PolicyStore,
    UserPolicy,
    evolve_user,
    parse_admin_policy,
)
from overseer_firewall.domain.tools import BUILTIN_CATALOGUE, Announced, catalogue_from
from tests.unit.firewall.fw_kernel import admin_from, default_admin

MAIL_RULE = """
[[rules]]
tool = "email.send"
recipients = ["*@example.com"]
level = "CONFIRM"
"""


def judge(store: PolicyStore, tool: str, args: dict[str, object]) -> tuple[Level, bool]:
    judgement = store.judge(tool, store.catalogue.get(tool), args)
    return judgement.level, judgement.denied


def mail(to: object, cc: object = None) -> dict[str, object]:
    args: dict[str, object] = {"to": to, "subject": "s", "body": "b"}
    if cc is not None:
        args["cc"] = cc
    return args


def test_defaults_read_only_auto_write_notify_email_and_shell_approve() -> None:
    clock = Announced("time.get_current_time", {"type": "object"}, source="mcp:time")
    store = PolicyStore(default_admin()).with_catalogue(catalogue_from([clock], {}))
    assert judge(store, "fs.read", {"path": "a"})[0] is Level.AUTO
    assert judge(store, "fs.list", {})[0] is Level.AUTO
    assert judge(store, "time.get_current_time", {"timezone": "UTC"})[0] is Level.AUTO
    assert judge(store, "fs.write", {"path": "a", "content": ""})[0] is Level.NOTIFY
    assert judge(store, "email.send", mail("bob@example.com"))[0] is Level.APPROVE
    assert judge(store, "shell.run", {"command": "ls"})[0] is Level.APPROVE


def test_catalogue_defaults_apply_without_any_policy_file() -> None:
    store = PolicyStore()
    assert judge(store, "fs.read", {"path": "a"})[0] is Level.AUTO
    assert judge(store, "fs.write", {"path": "a", "content": ""})[0] is Level.NOTIFY
    assert judge(store, "email.send", mail("a@b.c"))[0] is Level.APPROVE


def test_unknown_tool_is_confirm_even_when_a_glob_default_says_auto() -> None:
    store = PolicyStore(admin_from('[defaults]\n"*" = "AUTO"\n'))
    assert judge(store, "mcp.delete_everything", {})[0] is Level.CONFIRM


def test_email_to_example_com_is_confirm_and_to_any_other_domain_approve() -> None:
    store = PolicyStore(admin_from(MAIL_RULE))
    assert judge(store, "email.send", mail("bob@example.com"))[0] is Level.CONFIRM
    assert judge(store, "email.send", mail("Bob <BOB@Example.COM>"))[0] is Level.CONFIRM
    assert judge(store, "email.send", mail("eve@evil.test"))[0] is Level.APPROVE


def test_a_recipient_rule_needs_every_recipient_to_match() -> None:
    store = PolicyStore(admin_from(MAIL_RULE))
    assert judge(store, "email.send", mail(["a@example.com", "b@example.com"]))[0] is Level.CONFIRM
    assert judge(store, "email.send", mail(["a@example.com", "eve@evil.test"]))[0] is Level.APPROVE
    assert judge(store, "email.send", mail("a@example.com", cc="eve@evil.test"))[0] is Level.APPROVE
    assert judge(store, "email.send", mail("a@example.com, eve@evil.test"))[0] is Level.APPROVE


def test_a_bare_domain_matches_its_addresses() -> None:
    store = PolicyStore(
        admin_from('[[rules]]\ntool = "email.send"\nrecipients = ["example.com"]\nlevel = "NOTIFY"\n')
    )
    assert judge(store, "email.send", mail("bob@example.com"))[0] is Level.NOTIFY
    assert judge(store, "email.send", mail("bob@sub.example.com"))[0] is Level.APPROVE


def test_path_rules_match_normalised_paths() -> None:
    store = PolicyStore(admin_from('[[rules]]\ntool = "fs.write"\npaths = ["drafts/*"]\nlevel = "AUTO"\n'))
    assert judge(store, "fs.write", {"path": "./drafts/a.md", "content": ""})[0] is Level.AUTO
    assert judge(store, "fs.write", {"path": "drafts//b.md", "content": ""})[0] is Level.AUTO
    assert judge(store, "fs.write", {"path": "notes/a.md", "content": ""})[0] is Level.NOTIFY


def test_command_rules_deny_and_lower_but_never_lower_across_shell_metacharacters() -> None:
    store = PolicyStore(
        admin_from(
            """
[[rules]]
tool = "shell.run"
commands = ["*sudo *"]
deny = true

[[rules]]
tool = "shell.run"
commands = ["ls", "ls *"]
level = "NOTIFY"
"""
        )
    )
    assert judge(store, "shell.run", {"command": "ls   -la"}) == (Level.NOTIFY, False)
    assert judge(store, "shell.run", {"command": "ls; rm -rf ~"}) == (Level.APPROVE, False)
    assert judge(store, "shell.run", {"command": "ls $(whoami)"}) == (Level.APPROVE, False)
    assert judge(store, "shell.run", {"command": "echo x && sudo reboot"})[1] is True


def test_the_first_matching_rule_decides() -> None:
    store = PolicyStore(
        admin_from(
            """
[[rules]]
tool = "email.send"
recipients = ["boss@example.com"]
level = "APPROVE"

[[rules]]
tool = "email.send"
recipients = ["*@example.com"]
level = "NOTIFY"
"""
        )
    )
    assert judge(store, "email.send", mail("boss@example.com"))[0] is Level.APPROVE
    assert judge(store, "email.send", mail("ann@example.com"))[0] is Level.NOTIFY


def test_effective_level_is_the_stricter_of_admin_and_user() -> None:
    store = PolicyStore(default_admin())
    stricter = store.with_user_change(tool="fs.read", before=None, after=Level.APPROVE, trigger="test")
    assert judge(stricter, "fs.read", {"path": "a"})[0] is Level.APPROVE
    looser = store.with_user_change(tool="email.send", before=None, after=Level.AUTO, trigger="test")
    assert judge(looser, "email.send", mail("a@b.c"))[0] is Level.APPROVE


def test_user_layer_remembers_the_level_before_the_first_escalation() -> None:
    user = UserPolicy()
    user = evolve_user(user, tool="fs.write", before=None, after=Level.CONFIRM, trigger="a", hint=None)
    user = evolve_user(
        user, tool="fs.write", before=Level.CONFIRM, after=Level.APPROVE, trigger="b", hint="h"
    )
    entry = user.levels["fs.write"]
    assert (entry.level, entry.previous, entry.hint, user.version) == (Level.APPROVE, None, "h", 2)
    user = evolve_user(user, tool="fs.write", before=Level.APPROVE, after=None, trigger="relax", hint=None)
    assert "fs.write" not in user.levels


def test_policy_version_grows_with_admin_replacements_and_user_changes() -> None:
    store = PolicyStore(default_admin(version=2))
    assert store.version == 2
    store = store.with_user_change(tool="fs.read", before=None, after=Level.CONFIRM, trigger="t")
    assert store.version == 3


def test_default_policy_file_round_trips_through_its_mapping() -> None:
    admin = default_admin()
    again = parse_admin_policy(admin.as_dict(), version=admin.version)
    assert again.as_dict() == admin.as_dict()
    assert again == admin


def test_tools_shorthand_sets_default_levels() -> None:
    admin = parse_admin_policy({"tools": {"fs.write": "CONFIRM", "email.send": "APPROVE"}})
    store = PolicyStore(admin)
    assert judge(store, "fs.write", {"path": "a", "content": ""})[0] is Level.CONFIRM


def test_declared_tools_join_the_catalogue() -> None:
    admin = parse_admin_policy(
        {
            "tools": {
                "crm.lookup": {
                    "read_only": True,
                    "level": "AUTO",
                    "schema": {
                        "type": "object",
                        "properties": {"id": {"type": "string"}},
                        "required": ["id"],
                    },
                }
            }
        }
    )
    store = PolicyStore(admin)
    assert "crm.lookup" in store.catalogue
    assert judge(store, "crm.lookup", {"id": "7"})[0] is Level.AUTO


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"defaults": {"fs.read": "SOMETIMES"}}, "unknown permission level"),
        ({"rules": [{"tool": "fs.read"}]}, "exactly one of level or deny"),
        ({"rules": [{"tool": "fs.read", "level": "AUTO", "deny": True}]}, "exactly one of level or deny"),
        ({"rules": [{"tool": "fs.read", "level": "AUTO", "colour": "red"}]}, "unknown key 'colour'"),
        ({"loops": {"same_args": "three"}}, "[loops].same_args: must be an integer"),
        ({"loops": {"same_args": True}}, "[loops].same_args: must be an integer"),
        ({"loops": {"same_args": -1}}, "must not be negative"),
        ({"sandbox": {"output_dir": "../outside"}}, "relative path inside the sandbox"),
        ({"timeouts": {"APPROVE": {"on_timeout": "approve"}}}, "on_timeout: must be 'deny' or 'reject'"),
        ({"tools": {"fs.read": {"read_only": True}}}, "cannot be redeclared"),
        (
            {"tools": {"crm.lookup": {"schema": {"type": "object", "properties": 3}}}},
            "[tools].crm.lookup: schema is not a valid JSON schema",
        ),
        ({"firewall": True}, "unknown top-level key"),
    ],
)
def test_an_invalid_admin_policy_is_refused_with_the_reason(raw: dict[str, object], problem: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_admin_policy(raw)
    assert any(problem in p for p in caught.value.problems), caught.value.problems


def test_every_problem_of_an_admin_policy_is_listed_at_once() -> None:
    raw = {
        "firewall": True,
        "defaults": {"fs.read": "SOMETIMES"},
        "rules": [{"tool": "fs.read"}],
        "loops": {"same_args": -1},
    }
    with pytest.raises(PolicyError) as caught:
        parse_admin_policy(raw)
    problems = caught.value.problems
    assert len(problems) == 4, problems
    for where in (
        "unknown top-level key 'firewall'",
        "[defaults].fs.read:",
        "rules[0]:",
        "[loops].same_args:",
    ):
        assert any(p.startswith(where) for p in problems), (where, problems)


def test_describe_lists_admin_user_and_effective_level_per_tool() -> None:
    store = PolicyStore(default_admin()).with_user_change(
        tool="fs.write", before=None, after=Level.APPROVE, trigger="3 consecutive rejections"
    )
    described = store.describe()
    assert described["tools"]["fs.write"] == {
        "admin": "NOTIFY",
        "user": "APPROVE",
        "effective": "APPROVE",
        "irreversible": False,
        "read_only": False,
        "source": "builtin",
        "rules": [],
        "unreviewed": None,
    }
    assert described["user"]["levels"]["fs.write"]["trigger"] == "3 consecutive rejections"
    assert set(described["tools"]) == set(BUILTIN_CATALOGUE.names())


def test_notify_routes_are_read_kept_and_round_trip_through_the_mapping() -> None:
    admin = parse_admin_policy(
        {
            "notify": [
                {"channel": "ops", "levels": ["approve"], "tools": "email.*"},
                {"channel": "admins", "on": ["escalated"]},
            ]
        }
    )
    assert [(r.channel, r.levels, r.tools, r.on) for r in admin.notify] == [
        ("ops", ("APPROVE",), ("email.*",), ("held",)),
        ("admins", (), (), ("escalated",)),
    ]
    assert parse_admin_policy(admin.as_dict()) == admin


@pytest.mark.parametrize(
    ("notify", "problem"),
    [
        ([{"levels": ["APPROVE"]}], "notify[0].channel: is missing"),
        ([{"channel": "ops", "when": "now"}], "notify[0] has an unknown key 'when'"),
        ([{"channel": "ops", "levels": ["LOUD"]}], "notify[0].levels[0]"),
    ],
)
def test_a_notify_route_that_is_not_valid_is_refused_where_it_is(notify: list[object], problem: str) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_admin_policy({"notify": notify})
    assert any(problem in p for p in refused.value.problems), refused.value.problems
