"""L1 parameters: the call must fit its tool's JSON schema.

Unknown parameters (an LLM's hallucinated extras) are stripped with a warning;
a missing or invalid required one denies the call with the reason; an unknown
tool cannot be checked at all and is held at CONFIRM (fail-closed); a tool the
executor no longer offers (withdrawn) is refused, saying why.
"""

from __future__ import annotations

from fastjsonschema import JsonSchemaValueException

from overseer_firewall.domain.layers.base import KernelView
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.model import L1, Evaluation, Finding

_PASS = Finding(L1, "pass", "arguments match the schema")


class ParameterLayer:
    name = L1

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        spec = ev.spec
        if spec is None and ev.tool in kernel.policy.catalogue.withdrawn:
            why = kernel.policy.catalogue.withdrawn[ev.tool]
            ev.deny(L1, f"{ev.tool} is withdrawn: {why}; nobody can run it now", tool=ev.tool)
            return
        if spec is None:
            ev.hold(
                L1, f"unknown tool {ev.tool!r}: its arguments cannot be checked", Level.CONFIRM, tool=ev.tool
            )
            return
        args = ev.args
        known = spec.properties
        stripped = [] if args.keys() <= known else [name for name in args if name not in known]
        for name in stripped:
            del args[name]
        try:
            spec.validate(args)
        except JsonSchemaValueException as exc:
            ev.deny(L1, f"invalid arguments for {ev.tool}: {exc.message}", rule=exc.rule)
            return
        if stripped:
            ev.record(
                Finding(
                    L1,
                    "warn",
                    f"stripped unknown parameters: {', '.join(sorted(stripped))}",
                    {"stripped": stripped},
                )
            )
        else:
            ev.record(_PASS)
