"""The streams and the services' durable consumers, created before any service starts.

A service says what it reads (:class:`Subscription`); :func:`consumer_plan`
turns that into at most two durable consumers on the events stream, with
fixed names (:func:`overseer_runtime.permissions.durable_names`). The
``provisioner`` user, which only the supervisor (or a deployment's one-shot
provisioning job, ``python -m overseer_<service> provision``) holds, creates
the streams and these consumers; a service itself may only read its own.
That is what keeps a service's credential from reaching the JetStream API
that could forge another owner's events (a stream's ``RePublish``, a source,
a subject transform) or delete the streams.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RePublish,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, NotFoundError

from overseer_events.subjects import Subjects
from overseer_runtime.bus import connect
from overseer_runtime.config import NatsSettings
from overseer_runtime.credentials import NatsCredential
from overseer_runtime.partitions import Partition
from overseer_runtime.permissions import durable_names

log = logging.getLogger("overseer.provisioning")


@dataclass(frozen=True)
class Subscription:
    """Consume ``types`` (NATS-style patterns allowed, e.g. ``co.command.*``) from ``owner``'s stream.

    ``linger`` (seconds) is for work off the critical path: after the first message the
    consumer waits that long for more, so a burst is applied in one transaction and acked
    in one write instead of waking the whole apply path once per message. A service's
    lingering subscriptions share one consumer, so they share one linger.

    ``replicas_only``: what the replicas of a service tell each other (the firewall's policy, kept by
    partition 0), read on a consumer of its own from the stream's start, and only while the service
    runs as several.

    ``gather`` (seconds) is for a forerunner: an event this service reads that is
    usually followed closely by another it reads on the same consumer (an agent's
    proposal, then the firewall's verdict on it). When one opens a batch, the consumer
    waits for the follower, at most ``gather`` seconds, and applies both together: one
    wake-up and one transaction instead of two, while the service on the critical path
    has the CPU. Order is kept (one consumer), and the follower is never delayed.

    An event its publisher marked awaited (:data:`~overseer_events.subjects.AWAITED_HEADER`: someone
    waits on it to go on) is never a forerunner: it opens no wait and ends one. So a service whose
    subscriptions all gather lets everything else gather in bursts, in the same consumer and order,
    and still applies what someone waits on at once. Such a consumer gathers on the server (what
    follows a gather's first message is delivered when the gather ends, in one burst), and its
    publishers say on core NATS when the stream stored an awaited event, which ends a gather under way.
    """

    owner: str
    types: tuple[str, ...]
    linger: float = 0.0
    gather: float = 0.0
    replicas_only: bool = False


@dataclass(frozen=True)
class ConsumerPlan:
    """One durable consumer of a service on the events stream."""

    stream: str
    durable: str
    filter_subjects: tuple[str, ...]
    linger: float = 0.0
    gather: float = 0.0
    forerunners: tuple[str, ...] = ()  # the subjects that gather their follower
    joins: str | None = None
    """Partition 0's durable of the same kind, for a later partition's (see :func:`starting_point`)."""

    @property
    def name(self) -> str:
        return f"{self.durable}@events"

    @property
    def gathers_on_server(self) -> bool:
        """Whether every subject gathers: only an awaited message ends a gather, so what follows its
        first message may wait on the server (a publisher says when the stream stored an awaited one)."""
        return self.gather > 0 and self.forerunners == self.filter_subjects


IMMEDIATE, LINGERED, TOLD = 0, 1, 2  # a process's consumers, as durable_names() names them


def consumer_plan(
    service: str,
    subscriptions: Iterable[Subscription],
    subjects: Subjects,
    partition: Partition = Partition(),
) -> list[ConsumerPlan]:
    """The immediate consumer (``<service>``), the lingering one (``<service>_lingered``) and, while the
    service runs as several replicas, the one reading what they tell each other (``<service>_told``),
    each if used; of one partition (see :func:`~overseer_runtime.permissions.durable_names`)."""
    names = durable_names(service, partition.index)
    zero = durable_names(service, 0)
    groups: dict[int, list[Subscription]] = {IMMEDIATE: [], LINGERED: [], TOLD: []}
    for sub in subscriptions:
        if sub.replicas_only:
            if not partition.alone:
                groups[TOLD].append(sub)
        else:
            groups[LINGERED if sub.linger > 0 else IMMEDIATE].append(sub)
    plans = []
    for kind, subs in groups.items():
        if not subs:
            continue
        lingers = {sub.linger for sub in subs}
        if len(lingers) > 1:
            raise ValueError(f"{service}: subscriptions sharing a consumer share one linger ({lingers})")
        patterns = sorted({subjects.events_of(s.owner, t) for s in subs for t in s.types})
        forerunners = sorted({subjects.events_of(s.owner, t) for s in subs if s.gather > 0 for t in s.types})
        plans.append(
            ConsumerPlan(
                stream=subjects.events_stream,
                durable=names[kind],
                filter_subjects=tuple(patterns),
                linger=lingers.pop(),
                gather=max((s.gather for s in subs), default=0.0),
                forerunners=tuple(forerunners),
                # What replicas tell each other is read from the start, by a new replica too.
                joins=zero[kind] if partition.index > 0 and kind != TOLD else None,
            )
        )
    return plans


def consumer_config(
    plan: ConsumerPlan, *, batch: int, max_deliver: int, ack_wait: float, server: tuple[int, int]
) -> ConsumerConfig:
    config = ConsumerConfig(
        name=plan.durable,
        durable_name=plan.durable,
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_deliver=max_deliver,
        max_ack_pending=max(1000, batch * 4),
        max_waiting=64,
    )
    if len(plan.filter_subjects) == 1:
        config.filter_subject = plan.filter_subjects[0]
    elif server >= (2, 10):
        config.filter_subjects = list(plan.filter_subjects)
    else:
        # Before 2.10 a consumer has one filter: take the whole stream; the runtime skips the
        # subjects it did not ask for.
        config.filter_subject = None
    return config


async def provision_streams(
    js: JetStreamContext, subjects: Subjects, *, duplicate_window: float = 600.0, replicas: int = 1
) -> None:
    """Create or update every stream (idempotent). Streams deny delete and purge.

    The events stream announces every event it stores on ``live.<namespace>.<subject>``, its body
    with its subject, its sequence and the sequence of the one before it on that subject in headers:
    whoever follows the stream live (the gateway's WebSocket clients) learns at once that there is
    more, without a consumer, and a follower of one subject that has the event before it takes it as
    it comes, without reading it back.
    """
    for spec in subjects.stream_specs():
        config = StreamConfig(
            name=spec.name,
            subjects=list(spec.subjects) or None,
            storage=StorageType.FILE,
            retention=RetentionPolicy.LIMITS,
            discard=DiscardPolicy.OLD,
            duplicate_window=duplicate_window,
            deny_delete=True,
            deny_purge=True,
            allow_direct=True,
            num_replicas=replicas,
        )
        if spec.name == subjects.events_stream:
            config.republish = RePublish(src=">", dest="live.>", headers_only=False)
        try:
            await js.add_stream(config)
        except BadRequestError as exc:
            # Already there (perhaps created concurrently): bring its config up to date.
            if exc.err_code not in (10058, 10065):  # stream name in use / subjects overlap
                raise
            await js.update_stream(config)


async def provision(
    nc: Client,
    subjects: Subjects,
    services: Mapping[str, Sequence[Subscription]],
    nats_settings: NatsSettings,
    partitions: Mapping[str, int] | None = None,
) -> list[ConsumerPlan]:
    """Streams, then every durable consumer of ``services`` (name → subscriptions), of each of its
    ``partitions`` (name → count; one when not named); create-or-update.

    Run as the ``provisioner`` user. Returns the consumers it made sure of.
    """
    js = nc.jetstream()
    await provision_streams(
        js,
        subjects,
        duplicate_window=nats_settings.duplicate_window_seconds,
        replicas=nats_settings.replicas,
    )
    version = nc.connected_server_version
    counts = partitions or {}
    plans = [
        plan
        for service, subscriptions in services.items()
        for index in range(counts.get(service, 1))
        for plan in consumer_plan(service, subscriptions, subjects, Partition(index, counts.get(service, 1)))
    ]
    for plan in plans:
        config = consumer_config(
            plan,
            batch=nats_settings.pull_batch,
            max_deliver=nats_settings.max_deliver,
            ack_wait=nats_settings.ack_wait_seconds,
            server=(version.major, version.minor),
        )
        await js.add_consumer(plan.stream, await starting_point(js, plan, config))
    log.info("provisioned %s and %d consumers", subjects.events_stream, len(plans))
    return plans


async def starting_point(js: JetStreamContext, plan: ConsumerPlan, config: ConsumerConfig) -> ConsumerConfig:
    """Where a later partition's durable starts reading: where partition 0's stands when it is made.

    A service that grows from one process to several keeps partition 0's durables; a new replica's
    durable that read the stream from its start would apply again, in a store that has never seen
    them, the events partition 0 already applied (a call executed twice). So it starts at the first
    event partition 0 has not acknowledged: what was applied stays applied once, and what is still
    to come is shared by the new partitions. A durable that exists keeps its starting point (NATS
    does not change it), and one made with no partition 0 before it (a stack started split) reads
    the whole stream.
    """
    if plan.joins is None:
        return config
    try:
        existing = await js.consumer_info(plan.stream, plan.durable)
    except NotFoundError:
        try:
            zero = await js.consumer_info(plan.stream, plan.joins)
        except NotFoundError:
            return config
        config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
        config.opt_start_seq = zero.ack_floor.stream_seq + 1
        return config
    config.deliver_policy = existing.config.deliver_policy
    config.opt_start_seq = existing.config.opt_start_seq
    return config


async def provision_at(
    url: str,
    provisioner: NatsCredential,
    subjects: Subjects,
    services: Mapping[str, Sequence[Subscription]],
    nats_settings: NatsSettings,
    partitions: Mapping[str, int] | None = None,
    timeout: float = 60.0,
) -> list[ConsumerPlan]:
    """Connect to ``url`` as ``provisioner`` and :func:`provision`, retried while JetStream is not
    ready yet (a cluster electing its meta leader); an unreachable server fails at once."""
    nc = await connect(url, name="overseer-provisioner", credential=provisioner, reconnect=False)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                return await provision(nc, subjects, services, nats_settings, partitions)
            except Exception as exc:
                if loop.time() > deadline:
                    raise
                log.info("JetStream not ready (%s); retrying", exc or type(exc).__name__)
                await asyncio.sleep(0.5)
    finally:
        await nc.close()
