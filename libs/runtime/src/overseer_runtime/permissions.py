"""What each NATS credential may do, and why.

Single-writer is enforced by the server, not only by code: every service
connects as its own NATS user, and these tables are the whole of what that
user may publish and subscribe to. Anything not listed is refused by
nats-server. The rules follow one principle: **no credential but the owner's
can put an event on an owner's subject by any path, or answer an owner's
request.** The paths that exist, and how each is closed:

* **Publishing an event** on ``<ns>.<owner>.<type>``: only ``owner`` may
  publish under its own prefix (plus its own dead-letter subject).
* **The JetStream API**: a stream whose ``RePublish`` or subject transform
  lands on another owner's subject, a source added to the events stream, a
  deleted or purged stream: nats-server does not check publish permissions on
  republished or sourced subjects, so services get **no** stream or consumer
  management at all. Streams and the durable consumers are created by the
  ``provisioner`` user, which only the supervisor holds, before any service
  starts. A service may only read its own durable consumers
  (``CONSUMER.INFO``, ``CONSUMER.MSG.NEXT``), acknowledge what they deliver
  (``$JS.ACK`` on its own durables) and read stream information.
* **Answering a request**: a service subscribes only to its own RPC subjects
  (in its own queue group) and to its own inbox prefix (``_INBOX.<user>``),
  never to ``>``; it answers through ``allow_responses`` (one reply to a
  request it received), never by publishing to ``_INBOX.>``. So no other
  credential can receive, let alone answer, a request meant for the firewall.
* **Reading events** needs no subscription to event subjects: a durable pull
  consumer delivers into the service's own inbox.

No service may create a consumer, not even an ephemeral one: a create
request that names an existing durable updates it, so that right would let a
credential change another service's durable. The gateway reads the stream
for its WebSocket clients, and the firewall reads its published audit heads
back, with JetStream Direct Get, which changes nothing on the server. The
``reader`` (``overseer status`` and other operator tools) may only ask for
health and read-only observations.
"""

from __future__ import annotations

from dataclasses import dataclass

from overseer_events.subjects import SERVICES, rpc_permissions
from overseer_runtime.partitions import MAX_PARTITIONS, PARTITIONED_SERVICES, instance_name

# Users that are not services.
READER = "reader"  # operator tools: health and read-only queries
PROVISIONER = "provisioner"  # creates the streams and durable consumers; held by the supervisor alone
USERS: tuple[str, ...] = (*SERVICES, READER, PROVISIONER)

# A service has at most two durable consumers on the events stream: one for the work on a
# critical path, one for subscriptions that linger to apply bursts. Fixed names, so the
# permissions can name them.
LINGERED_SUFFIX = "_lingered"
TOLD_SUFFIX = "_told"


def durable_names(service: str, partition: int = 0) -> tuple[str, str, str]:
    """The durable consumers of one process of ``service``: its immediate one, its lingering one and the
    one reading what its replicas tell each other (partition ``k`` > 0 of a partitioned service:
    ``<service>_p<k>``, ``<service>_p<k>_lingered`` and ``<service>_p<k>_told``)."""
    base = instance_name(service, partition).replace(".", "_")  # a durable's name takes no dot
    return base, f"{base}{LINGERED_SUFFIX}", f"{base}{TOLD_SUFFIX}"


def readable_durables(service: str) -> list[str]:
    """Every durable ``service``'s credential may read: those of each partition it may run."""
    if service not in PARTITIONED_SERVICES:
        return list(durable_names(service)[:2])
    return [durable for index in range(MAX_PARTITIONS) for durable in durable_names(service, index)]


def inbox_prefix(user: str) -> str:
    """The inbox prefix of ``user``'s connections: replies and deliveries to it arrive under it alone."""
    return f"_INBOX.{user}"


@dataclass(frozen=True)
class Permissions:
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    allow_responses: bool = False


def _consumer_reading(service: str) -> list[str]:
    # The stream token is a wildcard: NATS permissions match whole tokens, and a stack's events
    # stream is named after its namespace (``OVERSEER_EVENTS``, or a test's own).
    rules: list[str] = []
    for durable in readable_durables(service):
        rules += [
            f"$JS.API.CONSUMER.INFO.*.{durable}",
            f"$JS.API.CONSUMER.MSG.NEXT.*.{durable}",
            f"$JS.ACK.*.{durable}.>",
        ]
    return rules


# Reading a stream by sequence (JetStream Direct Get): no consumer, nothing changed on the server.
_DIRECT_GET = ("$JS.API.DIRECT.GET.*", "$JS.API.DIRECT.GET.*.>")

# What a service may do beyond the rules every service has.
_EXTRA_PUBLISH: dict[str, tuple[str, ...]] = {
    # The WebSocket clients' live stream, read from each client's cursor; and its word that a live client
    # follows the ephemeral events (Subjects.ephemeral_listeners).
    "gateway": (*_DIRECT_GET, "listening.*.ephemeral"),
    # The published audit heads, read back to verify the local chain against them.
    "firewall": _DIRECT_GET,
    # The agent's reply as it is written (core NATS, never stored): only reasoning writes it.
    "reasoning": ("delta.*.reasoning.>",),
    # How an external agent's call stands once it settles (core NATS, never stored): only the executor,
    # which holds the contract, says it; the gateway answers the waiting agent with it.
    "executor": ("settled.*.executor",),
}


_EXTRA_SUBSCRIBE: dict[str, tuple[str, ...]] = {
    # The events stream's announcements of what it stored (sent by the server, so with no reply
    # subject to answer): the live stream's events as they come. Only the gateway, which may read
    # the whole stream anyway, may listen.
    # Events sent and never stored (the observer's execution states): the live stream passes them on.
    # The executor's word on how a call it holds stands once it settles (see the executor's rule above).
    "gateway": ("live.>", "delta.*.reasoning.>", "ephemeral.>", "settled.*.executor"),
}


def service_permissions(service: str) -> Permissions:
    """Its own events and dead letters, its RPC calls, its own durables; replies only to its requests."""
    if service not in SERVICES:
        raise ValueError(f"unknown service {service!r}")
    publish = [
        f"*.{service}.>",
        f"ephemeral.*.{service}.>",
        f"awaited.*.{service}",
        f"*.dlq.{service}",
        *rpc_permissions(service),
        *_consumer_reading(service),
        "$JS.API.STREAM.INFO.*",
        *_EXTRA_PUBLISH.get(service, ()),
    ]
    subscribe = [
        f"*.rpc.{service}.>",
        f"{inbox_prefix(service)}.>",
        # Another service's word that the stream stored an awaited event of its (no body: nothing to read).
        "awaited.*.*",
        # The gateway's word that a live client follows the ephemeral events (none are sent otherwise).
        "listening.*.ephemeral",
        *_EXTRA_SUBSCRIBE.get(service, ()),
    ]
    return Permissions(tuple(publish), tuple(subscribe), allow_responses=True)


def permissions_for(user: str) -> Permissions:
    if user == READER:
        return Permissions(tuple(rpc_permissions(READER)), (f"{inbox_prefix(READER)}.>",))
    if user == PROVISIONER:
        return Permissions(("$JS.API.>",), (f"{inbox_prefix(PROVISIONER)}.>",))
    return service_permissions(user)
