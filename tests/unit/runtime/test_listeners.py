"""Whether a live client follows the ephemeral events, as last heard from the gateway."""

from __future__ import annotations

from overseer_runtime.listeners import HEARD_FOR_SECONDS, Listeners


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nobody_follows_until_the_gateway_says_so() -> None:
    assert not Listeners(Clock()).present


def test_the_word_holds_for_a_while_and_then_lapses() -> None:
    clock = Clock()
    listeners = Listeners(clock)
    listeners.heard()
    clock.now += HEARD_FOR_SECONDS - 0.1
    assert listeners.present
    clock.now += 0.2
    assert not listeners.present


def test_each_repetition_extends_the_word() -> None:
    clock = Clock()
    listeners = Listeners(clock)
    listeners.heard()
    clock.now += HEARD_FOR_SECONDS - 0.1
    listeners.heard()
    clock.now += HEARD_FOR_SECONDS - 0.1
    assert listeners.present
