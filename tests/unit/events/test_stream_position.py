"""The runtime's reading of a JetStream ack subject agrees with nats.py's, for both layouts; how late a message
that failed for a passing reason is offered again."""

from __future__ import annotations

import pytest
from nats.aio.msg import Msg
from nats.errors import NotJSMessageError

from overseer_runtime.consumer import stream_position
from overseer_runtime.inbox import transient_delay

V1 = "$JS.ACK.OVERSEER_EVENTS.observer.1.4821.4790.1763780000123456789.17"
V2 = "$JS.ACK._.ACCHASH.OVERSEER_EVENTS.observer.2.4821.4790.1763780000123456789.17.rNd0m"


def message(reply: str) -> Msg:
    return Msg(None, subject="overseer.gateway.execution.proposed", reply=reply, data=b"{}")  # type: ignore[arg-type]


@pytest.mark.parametrize("reply", [V1, V2, V2.rsplit(".", 1)[0]])
def test_stream_position_matches_the_metadata_nats_py_parses(reply: str) -> None:
    msg = message(reply)
    assert stream_position(msg) == (4821, 17)
    assert stream_position(msg) == (msg.metadata.sequence.stream, msg.metadata.num_pending)


def test_a_message_without_an_ack_subject_is_refused() -> None:
    with pytest.raises(NotJSMessageError):
        stream_position(message(""))


def test_a_transient_failure_is_offered_again_twice_as_late_each_time_up_to_a_limit() -> None:
    assert [transient_delay(0.5, n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    # Twenty deliveries (max_deliver's default) last well beyond the server's own ack_wait (30 s).
    assert sum(transient_delay(0.5, n) for n in range(1, 20)) > 60
    assert transient_delay(10.0, 3) == 10.0  # a base above the limit is kept, never shortened
