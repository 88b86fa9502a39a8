"""The composition root: the only place concrete parts are wired together (DESIGN §2, §7.5)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from hub.adapter import Adapter, AdapterFactory, ConnectionHold, PlatformState, build_enabled
from hub.animas import Anima, AnimaRegistry
from hub.clock import Clock, SystemClock
from hub.commands.about import AboutCommands
from hub.commands.cron import CronCommands
from hub.commands.handler import CommandParts, CommandService
from hub.commands.people import PeopleCommands
from hub.commands.share import ShareCommands
from hub.commands.state import AnimaStates
from hub.commands.tasks import TaskCommands
from hub.delivery.claims import forget_claims
from hub.delivery.outbox import Outbox
from hub.delivery.platforms import Platforms
from hub.inbound.dispatch import Dispatcher
from hub.inbound.ingress import Ingress
from hub.inbound.pacing import Pacer, Pacing, Rate, flood_reporter
from hub.inbound.port import Port, PortParts
from hub.inbound.routing import Router
from hub.inbound.shared import SharedTurns
from hub.live import LiveFeed
from hub.memory.consolidation import Consolidator
from hub.memory.profiles import Profiles
from hub.memory.search_tool import remember_about_person_tool, search_memory_tool
from hub.memory.service import open_memory
from hub.messages import Address, DeliveryKind, Inbound
from hub.model.client import ModelClient
from hub.model.gate import GatedModelClient
from hub.model.parts import build_model
from hub.model.routes import hub_model_problems
from hub.model.tool_registry import ToolRegistry, builtin_tools
from hub.people.admission import Admission
from hub.people.credentials import Access
from hub.people.erasure import Forgotten, forget_person, reapply_forgets
from hub.people.handoffs import Handoffs
from hub.people.identity import IdentityService, PersonView
from hub.people.linking import Linking
from hub.people.sharing import Sharing
from hub.people.speaker import People
from hub.redaction.redact import redact, remember_secrets
from hub.roles import load_roles
from hub.schedule.agenda import Agenda, AgendaParts
from hub.schedule.distill_llm import anima_distillers
from hub.schedule.scheduler import Scheduler
from hub.schedule.sessions import close_idle_sessions
from hub.settings import ConfigError, Settings, configured_secrets
from hub.store.connections import LeasedConnection, SoleConnection
from hub.store.db import Database
from hub.store.listen import HUB_CHANGES, OUTBOX, TURN_EVENTS, Listener
from hub.store.ownership import Ownership, Partitions, SoleOwner, worker_name
from hub.store.versions import Versions
from hub.supervise import Supervisor
from hub.tasks.addressing import Addressing
from hub.tasks.board import TaskBoard
from hub.tasks.delegation import Delegation
from hub.tasks.manager_tools import offline_delegation, task_tools
from hub.tasks.parts import TaskParts
from hub.tasks.runner import TaskRunner
from hub.tasks.telling import report_links
from hub.turns.assigned import INBOX
from hub.turns.attachments import read_attachment_tool
from hub.turns.episodes import replay_recent
from hub.turns.events import EventBus
from hub.turns.inbox import Inbox
from hub.turns.llm import LiteLLMResponder
from hub.turns.offline import OfflineResponder
from hub.turns.runtime import Responders, Runtime, TurnParts
from hub.turns.thinking import Thinker

log = logging.getLogger(__name__)
_SESSION_SCAN = timedelta(minutes=1)


class Hub:
    """The composition root: builds each part once, in order, and owns their lifecycle;
    `port` is what the adapters are handed (`HubPort`, hub/inbound/port.py)."""

    def __init__(
        self,
        settings: Settings,
        adapter_factories: Mapping[str, AdapterFactory] | None = None,
        tools: ToolRegistry | None = None,
        responders: Responders | None = None,
        clock: Clock | None = None,
        *,
        for_a_command: bool = False,
    ) -> None:
        if for_a_command:
            # A CLI command's short-lived hub does its command, not the schedule: due
            # heartbeats, consolidation and delegated tasks wait for `animahub start`.
            scheduler = settings.scheduler.model_copy(update={"enabled": False})
            settings = settings.model_copy(update={"scheduler": scheduler})
        self.settings = settings
        self._for_a_command = for_a_command
        # Its credentials are redacted wherever text is kept or shown (hub/redaction/redact.py).
        remember_secrets(configured_secrets(settings).values())
        redact("")  # compiles the rule set now, not in the first person's turn
        self.clock: Clock = clock or SystemClock()
        self.db = Database(settings.database_url)
        self._build_sharing()
        self.animas = AnimaRegistry(settings.home / "animas", load_roles())
        self._build_people()
        self._build_delivery(adapter_factories)
        self._build_memory_and_model(tools or builtin_tools())
        self.anima_states = AnimaStates(
            self.db, self.inbox, self.outbox, self.live, versions=self.versions
        )
        responders = responders or Responders(
            LiteLLMResponder(settings.llm, self.tools, self.model),
            OfflineResponder(offline_delegation(self.tools, lambda: self.delegation)),
        )
        self._build_turns(responders)
        self._build_tasks(responders, runs=not for_a_command)
        self._build_inbound()
        self._build_commands()
        self._build_port()
        self._build_schedule(responders)
        self._planned: tuple[str, ...] | None = None
        self._sessions_checked: datetime | None = None
        self._catch_up: asyncio.Task[None] | None = None
        self.listener: Listener | None = None  # with `[storage] shared`, once started

    # wiring: each part built once, in the order the parts need one another ------------

    def _build_sharing(self) -> None:
        """What another writer of the database changed in the state cached here, and which
        Animas this process runs: all, or with `[storage] shared` the partitions it holds a
        lease on (docs/scale.md)."""
        settings = self.settings
        if self._for_a_command and settings.storage.shared:
            # It would join the workers and take leases for the length of a command.
            raise ConfigError(
                "with [storage] shared, run this while a worker runs, through its API "
                "(docs/scale.md): a command does not act on a shared database by itself"
            )
        # One hub is the only writer of its database: its caches cannot go stale.
        self.versions: Versions | None = None
        self.partitions: Partitions | None = None
        self.ownership: Ownership = SoleOwner()
        if settings.storage.shared:
            self.versions = Versions(self.db)
            ttl = settings.storage.lease_ttl_s
            self.partitions = self.ownership = Partitions(self.db, worker_name(), ttl_s=ttl)

    def _build_people(self) -> None:
        """Who is talking: identity, sign-in access, speakers, links between accounts, and
        the handoffs of where a person left off. Also the live feed and the task board."""
        settings, db = self.settings, self.db
        self.identity = IdentityService.of(settings, db, self.versions)
        self.access = Access(db, self.clock.now)
        self.people = People(db, self.identity)
        self.linking = Linking(db, self.identity, self.access)
        # What changed, for the dashboard's WS /ws (hub/live.py).
        self.live = LiveFeed(self.clock.now)
        self.tasks = TaskBoard(db, self.clock.now, self.live)
        self.handoffs = Handoffs(
            db,
            settings.people,
            lambda person_id: self.identity.by_id(person_id).id,
            self.identity.ids_of,
        )

    def _build_delivery(self, factories: Mapping[str, AdapterFactory] | None) -> None:
        """The adapters the settings enable, their health, and what comes in and goes out:
        ingress, inbox, events, outbox."""
        self.adapters: dict[str, Adapter] = build_enabled(self.settings, factories)
        self.supervisor = Supervisor(self.clock.now)
        self.platforms = Platforms(self.adapters)
        self.events = EventBus()
        self.ingress = Ingress(self.db, self.settings.runtime.max_message_bytes)
        self.inbox = Inbox(self.db, self.clock.now)
        self.outbox = Outbox(
            self.db,
            self.adapters,
            self.settings.outbox,
            self.clock.now,
            ready=self.platforms.ready,
            senders=self.supervisor.part("outbox senders"),
            live=self.live,
        )
        self.platforms.on_change(self._platform_changed)

    def _build_memory_and_model(self, tools: ToolRegistry) -> None:
        """The tools, memory, the model every call goes through (hub/model/parts.py), and
        consolidation, which distills with the model under the cap on scheduled calls."""
        settings = self.settings
        self.tools = tools
        self.tools.register(
            read_attachment_tool(self.db, self.adapters, settings.runtime.max_attachment_bytes)
        )
        self.memory = open_memory(settings.home, settings.memory, self.clock.now)
        model = build_model(settings, self.animas, self.clock, self.live)
        self.model_workers = model.workers
        self.model_health = model.health
        self.model: ModelClient = model.model
        self.model_gate = model.gate
        distill_with = GatedModelClient(self.model, self.model_gate)
        self.consolidator = (
            Consolidator(self.memory, anima_distillers(settings.llm, self.animas, distill_with))
            if self.memory is not None
            else None
        )
        if self.memory is not None:
            self.memory.aliases_of = self.identity.aliases_of
            self.memory.names_in = self.identity.names_in
            self.tools.register(search_memory_tool(self.memory))
            self.tools.register(remember_about_person_tool(self.memory))

    def _build_turns(self, responders: Responders) -> None:
        parts = TurnParts(
            db=self.db,
            settings=self.settings,
            animas=self.animas,
            identity=self.identity,
            responders=responders,
            events=self.events,
            outbox=self.outbox,
            inbox=self.inbox,
            memory=self.memory,
            handoffs=self.handoffs if self.memory is not None else None,
            ownership=self.ownership,
        )
        self.runtime = Runtime(
            parts,
            hold=self.anima_states,
            now=self.clock.now,
            health=self.supervisor.part("turns"),
            live=self.live,
        )

    def _build_tasks(self, responders: Responders, runs: bool) -> None:
        """The task runner (a task runs in its assignee's mailbox) and delegation, whose
        tools the Animas get."""
        settings = self.settings
        # Where a task may report: checked as it is made and again as it runs (class 9).
        self.addressing = Addressing(self.db)
        parts = TaskParts(
            db=self.db,
            board=self.tasks,
            animas=self.animas,
            outbox=self.outbox,
            memory=self.memory,
            addressing=self.addressing,
            limits=settings.tasks,
        )
        self.task_runner = TaskRunner(
            parts,
            Thinker(settings, responders, self.memory, self.animas.roles),
            queue=self.runtime,
            paused=self.anima_states,
            names=self.identity,
            now=self.clock.now,
            runs=runs,
            ownership=self.ownership,
        )
        self.runtime.run_task = self.task_runner.run
        self.outbox.on_sent(report_links(self.adapters, self.task_runner.telling))
        self.delegation = Delegation(
            self.tasks,
            self.animas,
            settings.tasks,
            self.clock.now,
            self.task_runner.start,
            self.addressing,
            runs=runs,
        )
        for tool in task_tools(self.delegation, self.tasks, self.clock.now):
            self.tools.register(tool)

    def _build_inbound(self) -> None:
        """From a platform event to a mailbox: pacing, admission, routing."""
        paced = self.settings.runtime
        self.pacing = Pacing(
            Pacer(Rate(paced.person_messages_per_minute, paced.person_burst)),
            Pacer(Rate(paced.channel_messages_per_minute, paced.channel_burst)),
            self.runtime.submit,
            flood_reporter(self.db, self.outbox),
        )
        self.admission = Admission(
            self.db, self.settings.people, self.access, self.identity, self.linking, self._notify
        )
        self.dispatcher = Dispatcher(
            inbox=self.inbox,
            identity=self.identity,
            router=Router(self.db, self.settings.hub.default_anima),
            animas=self.animas,
            runtime=self.runtime,
            health=self.supervisor.part("turns"),
            pacing=self.pacing,
            admission=self.admission,
        )
        self.shared: SharedTurns | None = None
        if self.partitions is not None:
            self.shared = SharedTurns(self.db, self.partitions, self.runtime, self.events)

    def _build_commands(self) -> None:
        self.sharing = Sharing(self.db, self.memory, self.identity, self.clock.now)
        self.commands = CommandService(
            CommandParts(
                db=self.db,
                inbox=self.inbox,
                settings=self.settings,
                animas=self.animas,
                identity=self.identity,
                states=self.anima_states,
                submit=self.runtime.submit,
                heartbeat=self._heartbeat_now,
                signin_link=self._signin_link if "web" in self.adapters else None,
                people=PeopleCommands(self.linking, self.admission, self._notify),
                about=AboutCommands(self.private_counts, self.forget_person),
                tasks=TaskCommands(self.tasks, self.delegation),
                admission=self.admission,
                share=ShareCommands(self.sharing, self._anima_here),
            )
        )

    def _build_port(self) -> None:
        """What the adapters are handed at their start (`HubPort`)."""
        self.port = Port(
            PortParts(
                db=self.db,
                clock=self.clock,
                ingress=self.ingress,
                commands=self.commands,
                dispatcher=self.dispatcher,
                events=self.events,
                animas=self.animas,
                people=self.people,
                platforms=self.platforms,
                outbox=self.outbox,
                connections=self._connection,
            )
        )

    def _connection(self, key: str, quiet_s: float) -> ConnectionHold:
        """A platform connection one process may keep: all of them for the one hub, through
        a lease with `[storage] shared` (hub/store/connections.py)."""
        if self.partitions is None:
            return SoleConnection()
        ttl = self.settings.storage.lease_ttl_s
        return LeasedConnection(self.db, self.partitions.me, key, quiet_s, ttl_s=ttl)

    def _build_schedule(self, responders: Responders) -> None:
        settings = self.settings
        self.agenda = Agenda(
            AgendaParts(
                db=self.db,
                settings=settings,
                animas=self.animas,
                responders=responders,
                outbox=self.outbox,
                clock=self.clock,
                live=self.live,
                paused=self.anima_states.is_paused,
                run_command=CronCommands(self.commands, self.clock.now).run,
                memory=self.memory,
                consolidator=self.consolidator,
                gate=self.model_gate,
            )
        )
        # Room for every capped model call and four runs besides (quiet heartbeats, command
        # crons), so that runs waiting for the model do not hold up runs that need none.
        runs = settings.scheduler.max_model_calls + 4
        self.scheduler = Scheduler(
            self.db, self.clock, self.agenda.run, runs, ownership=self.ownership
        )

    # lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        (self.settings.home / "shared" / "users").mkdir(parents=True, exist_ok=True)
        # Before anyone is made or let in: an admin or allowlist entry a stranger's name
        # could have taken stops the hub (hub/people/names.py).
        if problem := self.config_problem():
            raise ConfigError(problem)
        owner = self.identity.owner()  # now, so that a database outage later cannot hide it
        log.info("the hub's owner is %s (%s)", owner.display_name, owner.id)
        if self.shared is None:
            # Before any platform can start a turn: what is `processing` now was cut off.
            if interrupted := self.inbox.mark_interrupted():
                log.warning(
                    "%d turns were cut off by the last stop; running them again", interrupted
                )
            forget_claims(self.db)  # this hub holds the database: every claim was ours
        for problem in self.animas.load():
            log.error("Anima not loaded: %s", problem)
        # The model workers start with the first model call (hub/model/pool.py), not here:
        # each holds litellm (~200 MB) and its import took a core for 2-3 s of the start,
        # which an idle hub, or one in offline mode, never needs (issue 47).
        for problem in hub_model_problems(
            self.settings.llm, (a.spec.model for a in self.animas.all())
        ):
            log.warning("model setup: %s", problem)
        if self.memory is not None:
            # A command's hub stops within seconds: warming the embedder (1-2 s) would only
            # hold up its stop; a command that searches loads it as it goes.
            await self.memory.start(self.animas.names(), warm_up=not self._for_a_command)
            await reapply_forgets(self.db, self.identity, self.memory, self.settings.home)
            replay_recent(self.db, self.memory, set(self.animas.names()))
        # Before the platforms start: what they deliver now (sent while the hub was down)
        # came after what was accepted before, so its turns must queue behind those.
        if self.shared is not None:
            await self.shared.begin()  # the turns of the partitions it takes (docs/scale.md)
        else:
            self.dispatcher.recover()
            if cut_off := self.task_runner.recover():
                log.warning("%d tasks were cut off by the last stop; running them again", cut_off)
        await self.platforms.start(self.port)
        self.supervisor.start("outbox", self.outbox.run)
        if self.shared is not None:
            self._listen()
        memory = self.memory
        if memory is not None:
            self.supervisor.start("memory access log", lambda part: memory.flush_forever(part.ok))
        if self.settings.scheduler.enabled:
            self.scheduler.open()
            # Not awaited: what is due after a pause (idle sessions to summarise, missed
            # heartbeats) runs once the server answers; health says "catching up" meanwhile.
            self._catch_up = asyncio.create_task(self._catch_up_then_tick(), name="catch-up")

    def _listen(self) -> None:
        """With `[storage] shared`, this worker's part: its leases and their turns, and the
        other workers' changes, deliveries and messages heard at once (hub/store/listen.py)."""
        shared, partitions, versions = self.shared, self.partitions, self.versions
        assert shared is not None and partitions is not None and versions is not None
        hints = {
            HUB_CHANGES: lambda _kind: versions.hint(),
            OUTBOX: self._delivery_added,
            INBOX: shared.hint,
            TURN_EVENTS: shared.relay,
        }
        self.supervisor.start("leases", lambda part: partitions.run(part, self._partitions_moved))
        self.supervisor.start("inbox sweep", shared.run)
        name = f"animahub listen {partitions.me}"
        self.listener = Listener(self.settings.database_url, hints, versions.hint, name)
        self.supervisor.start("listener", self.listener.run)

    def _partitions_moved(self, gained: set[int], lost: set[int]) -> None:
        assert self.shared is not None
        self.shared.changed(gained, lost)
        if lost:
            self.scheduler.let_go()

    def _delivery_added(self, _payload: str) -> None:
        self.outbox.wake()

    async def _catch_up_then_tick(self) -> None:
        await asyncio.sleep(0)  # let the server finish starting first
        try:
            await self.on_tick()
            await self.scheduler.run_due()
        finally:
            tick_s = self.settings.scheduler.tick_s
            self.supervisor.start(
                "scheduler", lambda part: self.scheduler.every(tick_s, self.on_tick, part.ok)
            )

    @property
    def catching_up(self) -> bool:
        return self._catch_up is not None and not self._catch_up.done()

    async def caught_up(self) -> None:
        """Once what was due after the pause has run (at once if nothing was caught up)."""
        if self._catch_up is not None:
            await asyncio.gather(asyncio.shield(self._catch_up), return_exceptions=True)

    def uses_a_model(self) -> bool:
        """Whether any Anima is answered by a language model (else offline mode)."""
        return bool(self.settings.llm.model) or any(anima.spec.model for anima in self.animas.all())

    async def on_tick(self) -> None:
        """Each scheduler tick: re-plan when Animas or crons changed, close idle sessions."""
        names = tuple(self.animas.names())
        if self.agenda.reload_crons() or names != self._planned:
            self.scheduler.plan(self.agenda.specs())
            self._planned = names
        self.task_runner.sweep()
        now = self.clock.now()
        checked = self._sessions_checked
        if self.consolidator is not None and (checked is None or now - checked >= _SESSION_SCAN):
            self._sessions_checked = now
            idle = timedelta(minutes=self.settings.scheduler.session_idle_minutes)
            await close_idle_sessions(self.db, self.consolidator, now, idle, self.handoffs)

    async def stop(self) -> None:
        if self._catch_up is not None:
            self._catch_up.cancel()
            await asyncio.gather(self._catch_up, return_exceptions=True)
        await self.scheduler.close()
        self.task_runner.close()
        await self.model_health.close()  # no more checks; calls cut off by the stop not counted
        await self.runtime.mailboxes.close()
        if self.shared is not None:
            self.shared.hand_over()  # at once, not when the leases lapse
        if self.model_workers is not None:
            await self.model_workers.stop()
        await self.supervisor.stop()
        await self.outbox.close()
        await self.platforms.stop()
        if self.memory is not None:
            await self.memory.stop()
        self.db.dispose()

    # callbacks of the parts ------------------------------------------------------------

    def _platform_changed(self, platform: str, state: PlatformState) -> None:
        self.live.publish("platform", None, name=platform, state=state.value)
        if state is PlatformState.UP:
            self.outbox.wake()  # what waited for it goes now

    # admin -----------------------------------------------------------------------------

    def _anima_here(self, inbound: Inbound, person: PersonView) -> str | None:
        """The Anima a message sent where `inbound` was would reach: whom `/share TEXT`
        shares with."""
        router = Router(self.db, self.settings.hub.default_anima)
        return router.route(replace(inbound, addressed=True), person, self.animas.names())

    def private_counts(self, person: PersonView) -> dict[str, int]:
        """How many memories each Anima keeps private to the person (and ids merged in)."""
        if self.memory is None:
            return {}
        return self.memory.count_scopes([f"person:{i}" for i in self.identity.ids_of(person.id)])

    async def forget_person(self, person: PersonView, actor: str) -> Forgotten:
        """Everything kept private to the person goes (hub/people/erasure.py)."""
        profiles = self.memory.profiles if self.memory else Profiles(self.identity.users_dir)
        return await forget_person(
            self.db, self.identity, self.memory, profiles, self.handoffs, person, actor
        )

    def _notify(self, address: Address, text: str) -> None:
        """A notice from the hub itself (the other side of a `/link`), through the outbox."""
        anima = self.settings.hub.default_anima or (self.animas.names() or ["hub"])[0]
        with self.db.write() as conn:
            self.outbox.enqueue(
                conn, address, text, DeliveryKind.NOTICE, anima, f"notice:{uuid.uuid4()}"
            )

    def _signin_link(self, person_id: str) -> str:
        issued = self.access.create_signin(person_id, created_by="/web")
        return f"{self.settings.server.link_base()}/signin/{issued.secret}"

    async def _heartbeat_now(self, name: str) -> str:
        return (await self.agenda.heartbeat_now(name)).line()

    def config_problem(self) -> str:
        """What `start` refuses in `[hub] admins` / `[people] allowlist`, in one line ("" when
        nothing), the database migrated first: `animahub start` asks before it serves."""
        self.db.migrate()
        return self.identity.config_problem(self.settings.people.allowlist)

    def create_anima(self, name: str, role: str, supervisor: str | None) -> Anima:
        return self.animas.create(name, role, supervisor)
