"""One handler for every platform's commands: `/anima …` and `/whoami` (DESIGN §2).

Slack slash commands, Discord application commands and commands typed in the web chat all
arrive as an `Inbound` with `command` set. Ingress has already persisted and deduplicated
it; `CommandService.answer` resolves the sender, asks admission (a stranger held back by
the DM policy runs only `hub.people.admission.STRANGER_COMMANDS`, and is otherwise told the
pairing notice), runs the command once, closes the inbox row (no turn, no model) and
returns the text the adapter shows as the command's immediate response. Admin commands
check the person's roles (from `[hub] admins`), and every admin action and every refusal
is written to the audit log with who, where and what.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import func, select
from sqlmodel import col

from hub.animas import Anima, AnimaRegistry, effective_model
from hub.commands.about import FORGET_NAMES, AboutCommands
from hub.commands.people import PeopleCommands
from hub.commands.share import ShareCommands
from hub.commands.state import AnimaStates
from hub.commands.tasks import TaskCommands
from hub.messages import AddressKind, Command, DeliveryStatus, Inbound, utcnow
from hub.people.admission import Admission
from hub.people.identity import IdentityService, PersonView
from hub.settings import Settings
from hub.slash import USAGE, parse_command
from hub.store.db import Database, as_utc
from hub.store.models import (
    AuditEntry,
    ChannelBinding,
    DeliveryRow,
    Identity,
    InboxItem,
    InboxStatus,
    Turn,
)
from hub.turns.inbox import OPEN, WAITING, Inbox
from hub.turns.mailbox import TurnJob

log = logging.getLogger(__name__)

HeartbeatTrigger = Callable[[str], Awaitable[str]]
"""Runs one heartbeat of the named Anima now; returns a one-line outcome."""
Submit = Callable[[TurnJob], None]
"""Hands a released message to the runtime (`Runtime.submit`)."""
SignInLink = Callable[[str], str]
"""A new one-time sign-in link to the web chat for the person with this id."""

# subcommand -> what a refusal says only admins may do
ADMIN_ONLY = {
    "bind": "bind channels",
    "unbind": "unbind channels",
    "pause": "pause Animas",
    "resume": "resume Animas",
    "heartbeat": "trigger heartbeats",
    "approve": "let people in",
    "delegate": "delegate tasks",
}
NEEDS_NAME = frozenset({"status", "bind", "pause", "resume", "heartbeat"})
NO_ARGS = frozenset({"list", "unbind", "tasks"})
ADMINS_HINT = "Admins are listed in hub.toml [hub] admins."


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandParts:
    """What the commands are handed by the composition root: the parts they read and
    change, the roles they ask of parts above them (`submit`: `Runtime.submit`;
    `heartbeat`: one heartbeat now), and the command groups of their own modules, each
    optional (a command whose group is missing says it is not available here)."""

    db: Database
    inbox: Inbox
    settings: Settings
    animas: AnimaRegistry
    identity: IdentityService
    states: AnimaStates
    submit: Submit
    heartbeat: HeartbeatTrigger
    signin_link: SignInLink | None = None
    people: PeopleCommands | None = None
    about: AboutCommands | None = None
    tasks: TaskCommands | None = None
    admission: Admission | None = None
    share: ShareCommands | None = None


class CommandService:
    def __init__(self, parts: CommandParts) -> None:
        self._share = parts.share
        self._admission = parts.admission
        self._about = parts.about
        self._tasks = parts.tasks
        self._signin_link = parts.signin_link
        self._people = parts.people
        self._db = parts.db
        self._inbox = parts.inbox
        self._settings = parts.settings
        self._animas = parts.animas
        self._identity = parts.identity
        self._states = parts.states
        self._submit = parts.submit
        self._heartbeat = parts.heartbeat

    # the inbox side ---------------------------------------------------------------------

    async def answer(self, row: InboxItem, inbound: Inbound, duplicate: bool) -> str:
        """Run a persisted command once and close its inbox row; a redelivery is not run
        again but told what became of the first delivery."""
        if duplicate:
            return _again(row)
        if inbound.sender.is_bot:
            self._inbox.close_now(row, InboxStatus.IGNORED, "a command sent by a bot")
            return "Commands sent by bots are not run."
        person = self._identity.resolve(inbound.sender)
        refused = self._refused(inbound, person)
        if refused is not None:
            reason = f"{person.id} is not let in on {inbound.sender.platform} yet: command not run"
            self._inbox.close_now(row, InboxStatus.IGNORED, reason, person_id=person.id)
            return refused
        try:
            reply = await self.handle(inbound, person)
        except Exception as exc:
            log.exception("command %r from %s failed", inbound.text, inbound.sender.key)
            self._inbox.close_now(
                row, InboxStatus.FAILED, f"the command failed: {exc!r}", person_id=person.id
            )
            return f"Sorry, that command failed ({exc}). The details are in the hub log."
        self._inbox.close_now(row, InboxStatus.DONE, None, person_id=person.id)
        return reply

    def _refused(self, inbound: Inbound, person: PersonView) -> str | None:
        """What a stranger is told instead of running the command; None: it runs."""
        if self._admission is None:
            return None
        command = inbound.command or parse_command(inbound.text) or Command("", ())
        return self._admission.refuses_command(inbound, person, command)

    # commands ---------------------------------------------------------------------------

    async def handle(self, inbound: Inbound, person: PersonView) -> str:
        """The reply to one command from `person`; changes state only for admins."""
        command = inbound.command or parse_command(inbound.text)
        if command is None:
            return USAGE
        if command.name == "whoami":
            return self._whoami(person, inbound)
        if command.name == "web":
            return self._web(person, inbound)
        if command.name in FORGET_NAMES:
            if self._about is None:
                return "This hub keeps no memory to forget."
            return await self._about.forget(command, person)
        if command.name == "share":
            if self._share is None:
                return "Sharing is not available on this hub."
            return self._share.answer(command, person, inbound)
        if command.name in ("link", "unlink"):
            if self._people is None:
                return "Linking accounts is not available on this hub."
            return self._people.answer(command, person, inbound)
        if command.name != "anima":
            return f"Unknown command /{command.name}.\n{USAGE}"
        return await self._anima(command, inbound, person)

    async def _anima(self, command: Command, inbound: Inbound, person: PersonView) -> str:
        sub = command.args[0].lower() if command.args else ""
        rest = command.args[1:]
        if sub not in NEEDS_NAME | NO_ARGS | {"approve", "delegate"}:
            said = f" /anima {sub}" if sub else ""
            return f"Unknown command{said}.\n{USAGE}"
        if sub in ADMIN_ONLY and not person.is_admin:
            self._audit(inbound, person, "denied", f"anima.{sub}", {"args": list(command.args[1:])})
            return f"Sorry, only hub admins can {ADMIN_ONLY[sub]}. {ADMINS_HINT}"
        if sub == "approve":
            if self._people is None:
                return "Letting people in is not available on this hub."
            return self._people.approve(tuple(rest), person)
        if sub == "delegate":
            if self._tasks is None:
                return "No task board here."
            answer = self._tasks.delegate(tuple(rest), inbound, person)
            self._audit(inbound, person, "anima.delegate", " ".join(rest[:1]), {"answer": answer})
            return answer
        if sub in NO_ARGS:
            if rest:
                return f"/anima {sub} takes no name.\n{USAGE}"
            if sub == "tasks":
                return self._tasks.listing(person) if self._tasks else "No task board here."
            return self._list() if sub == "list" else self._unbind(inbound, person)
        if len(rest) != 1:
            return f"/anima {sub} needs one Anima name.\n{USAGE}"
        name = rest[0].lstrip("@").lower()
        anima = self._animas.get(name)
        if anima is None:
            known = ", ".join(self._animas.names()) or "none yet"
            return f"No Anima named {name!r} (Animas: {known}).\n{USAGE}"
        if sub == "status":
            return self._status(anima, person)
        if sub == "bind":
            return self._bind(anima, inbound, person)
        if sub == "pause":
            return self._pause(anima, inbound, person)
        if sub == "resume":
            return self._resume(anima, inbound, person)
        return await self._trigger_heartbeat(anima, inbound, person)

    def _list(self) -> str:
        animas = self._animas.all()
        if not animas:
            return "No Animas yet. Create one with `animahub anima create --name NAME --role ROLE`."
        bindings = self._bindings()
        paused = self._states.paused()
        lines = [f"{len(animas)} Anima{'s' if len(animas) != 1 else ''}:"]
        for anima in animas:
            spec = anima.spec
            boss = f"supervisor {spec.supervisor}" if spec.supervisor else "no supervisor"
            run = "paused" if anima.name in paused else "running"
            bound = ", ".join(bindings.get(anima.name, [])) or "none"
            lines.append(f"- {anima.name} ({spec.role}), {boss}, {run}; channels bound: {bound}")
        return "\n".join(lines)

    def _status(self, anima: Anima, person: PersonView) -> str:
        spec = anima.spec
        name = anima.name
        role = self._animas.roles.get(spec.role)
        model = effective_model(anima, self._settings.llm) or "offline (no model configured)"
        paused = self._states.is_paused(name)
        bound = ", ".join(self._bindings().get(name, [])) or "none"
        beat = spec.heartbeat
        hours = beat.active_hours or "always"
        channels = ", ".join(beat.channels) or "none"
        with self._db.engine.connect() as conn:
            last_turn = conn.execute(
                select(col(Turn.created_at))
                .where(col(Turn.anima) == name)
                .order_by(col(Turn.id).desc())
                .limit(1)
            ).scalar()
            inbox: dict[str, int] = dict(
                conn.execute(
                    select(col(InboxItem.status), func.count())
                    .where(
                        col(InboxItem.anima) == name,
                        col(InboxItem.status).in_(WAITING),
                    )
                    .group_by(col(InboxItem.status))
                ).all()
            )
            failed = conn.execute(
                select(func.count())
                .select_from(DeliveryRow)
                .where(
                    col(DeliveryRow.anima) == name, col(DeliveryRow.status) == DeliveryStatus.FAILED
                )
            ).scalar()
        pending = sum(int(inbox.get(status, 0)) for status in OPEN)
        title = f"{spec.role}: {role.title}" if role else spec.role
        return "\n".join(
            [
                f"{name} ({title}): {'paused' if paused else 'running'}",
                f"model: {model}",
                f"supervisor: {spec.supervisor or 'none'}",
                f"bound to: {bound}",
                f"last turn: {_when(last_turn, person.timezone)}",
                f"inbox: {pending} pending, {int(inbox.get(InboxStatus.HELD, 0))} held",
                f"failed deliveries: {int(failed or 0)}",
                f"heartbeat: every {beat.interval_minutes} min, active hours {hours}, "
                f"channels {channels}",
            ]
        )

    def _bind(self, anima: Anima, inbound: Inbound, person: PersonView) -> str:
        if inbound.address.kind is AddressKind.DM:  # routing: the last Anima here answers
            return (
                "A direct conversation is not bound: the Anima you last talked with here "
                f'answers. Name {anima.name} in a message ("{anima.name}, …") to talk with '
                "them; /anima bind is for channels and groups."
            )
        channel = inbound.address.channel_key
        with self._db.session() as session:
            binding = session.get(ChannelBinding, channel)
            previous = binding.anima if binding is not None else None
            if binding is None:
                binding = ChannelBinding(channel_key=channel, anima=anima.name)
            binding.anima = anima.name
            binding.created_by = inbound.sender.key
            binding.created_at = utcnow()
            session.add(binding)
        self._audit(
            inbound, person, "anima.bind", anima.name, {"channel": channel, "previous": previous}
        )
        if previous == anima.name:
            return f"This channel was already bound to {anima.name}."
        was = f" (it was bound to {previous})" if previous else ""
        return f"This channel is now bound to {anima.name}{was}: it answers messages here."

    def _unbind(self, inbound: Inbound, person: PersonView) -> str:
        channel = inbound.address.channel_key
        with self._db.session() as session:
            binding = session.get(ChannelBinding, channel)
            previous = binding.anima if binding is not None else None
            if binding is not None:
                session.delete(binding)
        self._audit(inbound, person, "anima.unbind", channel, {"previous": previous})
        if previous is None:
            return "This channel has no binding; there was nothing to unbind."
        return f"This channel is no longer bound to {previous}."

    def pause(self, name: str, actor: str, where: str, detail: dict[str, Any]) -> bool:
        """Pause `name` and audit it: `/anima pause` and the API's pause; False if it was."""
        changed = self._states.pause(name, actor)
        self.audit(actor, where, "anima.pause", name, {**detail, "changed": changed})
        return changed

    def resume(self, name: str, actor: str, where: str, detail: dict[str, Any]) -> tuple[bool, int]:
        """Resume `name`, answer what it held, audit it: `/anima resume` and the API's
        resume. Whether it was paused, and how many held messages are being answered."""
        changed, jobs = self._states.resume(name, actor)
        for job in jobs:
            self._submit(job)
        released = {"changed": changed, "released": len(jobs)}
        self.audit(actor, where, "anima.resume", name, {**detail, **released})
        return changed, len(jobs)

    def _pause(self, anima: Anima, inbound: Inbound, person: PersonView) -> str:
        changed = self.pause(
            anima.name, inbound.sender.key, str(inbound.address), _by(inbound, person)
        )
        if not changed:
            return f"{anima.name} is already paused."
        return (
            f"{anima.name} is paused: messages to it are kept and answered when it is resumed; "
            "its heartbeats and crons are skipped."
        )

    def _resume(self, anima: Anima, inbound: Inbound, person: PersonView) -> str:
        changed, n = self.resume(
            anima.name, inbound.sender.key, str(inbound.address), _by(inbound, person)
        )
        held = f"{n} held message{'' if n == 1 else 's'} {'is' if n == 1 else 'are'} being answered"
        if not changed:
            return f"{anima.name} was not paused" + (f"; {held}." if n else ".")
        return f"{anima.name} is running again; {held}."

    async def _trigger_heartbeat(self, anima: Anima, inbound: Inbound, person: PersonView) -> str:
        if self._states.is_paused(anima.name):
            self._audit(inbound, person, "anima.heartbeat", anima.name, {"skipped": "paused"})
            return f"{anima.name} is paused; resume it before triggering a heartbeat."
        try:
            outcome = await self._heartbeat(anima.name)
        except Exception as exc:
            self._audit(inbound, person, "anima.heartbeat", anima.name, {"error": repr(exc)})
            raise
        self._audit(inbound, person, "anima.heartbeat", anima.name, {"outcome": outcome})
        return f"Heartbeat of {anima.name}: {outcome}"

    def _web(self, person: PersonView, inbound: Inbound) -> str:
        """A sign-in link to the web chat. The platform vouches for the sender, and the link
        is only ever the answer in their own DM, which nobody else reads."""
        if self._signin_link is None:
            return "The web chat is not available on this hub."
        if inbound.address.platform == "web":
            return f"You are already in the web chat, as {person.display_name}."
        if inbound.address.kind is not AddressKind.DM:
            return "Send /web to me in a direct message: the sign-in link is for you alone."
        link = self._signin_link(person.id)
        self._audit(inbound, person, "person.invite", person.id, {"via": "/web"})
        return (
            f"Your sign-in link to the web chat, as {person.display_name} "
            f"(it works once, for 15 minutes): {link}"
        )

    def _whoami(self, person: PersonView, inbound: Inbound) -> str:
        with self._db.engine.connect() as conn:
            identities = conn.execute(
                select(col(Identity.platform), col(Identity.user_id))
                .where(col(Identity.person_id) == person.id)
                .order_by(col(Identity.platform), col(Identity.user_id))
            ).all()
        linked = ", ".join(f"{p}:{u}" for p, u in identities) or "none"
        roles = ", ".join(person.roles) if person.roles else "none"
        admin = "you are a hub admin" if person.is_admin else "you are not a hub admin"
        hub_default = self._settings.hub.default_anima
        default = person.default_anima or (
            f"none (the hub default is {hub_default})" if hub_default else "none"
        )
        return "\n".join(
            [
                f"You are {person.display_name} (person id {person.id}).",
                f"identities: {linked}",
                f"roles: {roles} ({admin})",
                f"timezone: {person.timezone or 'UTC'}",
                f"language: {person.language or 'unset'}",
                f"default Anima: {default}",
                *(self._about.lines(person) if self._about is not None else []),
                *_this_conversation(inbound),
            ]
        )

    # helpers ----------------------------------------------------------------------------

    def _bindings(self) -> dict[str, list[str]]:
        with self._db.engine.connect() as conn:
            rows = conn.execute(
                select(col(ChannelBinding.anima), col(ChannelBinding.channel_key)).order_by(
                    col(ChannelBinding.channel_key)
                )
            ).all()
        bound: dict[str, list[str]] = {}
        for anima, channel in rows:
            bound.setdefault(anima, []).append(channel)
        return bound

    def _audit(
        self,
        inbound: Inbound,
        person: PersonView,
        action: str,
        target: str,
        detail: dict[str, Any],
    ) -> None:
        where, by = str(inbound.address), _by(inbound, person)
        self.audit(inbound.sender.key, where, action, target, {**by, **detail})

    def audit(
        self, actor: str, where: str, action: str, target: str, detail: dict[str, Any]
    ) -> None:
        with self._db.session() as session:
            session.add(
                AuditEntry(actor=actor, where=where, action=action, target=target, detail=detail)
            )
        log.info("%s by %s at %s: %s %s", action, actor, where, target, detail)


def _by(inbound: Inbound, person: PersonView) -> dict[str, Any]:
    """Who ran a command, for its audit entry."""
    return {"person": person.id, "command": inbound.text}


def _again(row: InboxItem) -> str:
    if row.status == InboxStatus.DONE:
        return "Already done: this command was run when it first arrived."
    if row.status in OPEN:
        return "Already received: this command is still being run."
    if row.status == InboxStatus.FAILED:
        return f"This command failed when it first arrived ({row.error}); send it again."
    return f"This command was not run ({row.error or row.status})."


def _when(moment: datetime | None, timezone: str) -> str:
    if moment is None:
        return "never"
    try:
        zone = ZoneInfo(timezone) if timezone else None
    except (ZoneInfoNotFoundError, ValueError):
        zone = None
    local = as_utc(moment).astimezone(zone or UTC)
    return local.strftime("%Y-%m-%d %H:%M ") + (timezone if zone else "UTC")


def _this_conversation(inbound: Inbound) -> list[str]:
    """Where /whoami was asked, in the forms a cron's `post_to:` takes (docs/crons.md)."""
    address = inbound.address
    if inbound.sender.platform == "hub":  # a command cron: nobody's conversation
        return []
    lines = [f"this conversation: {address} ({address.kind.value})"]
    if address.kind is AddressKind.DM:
        lines.append(f"your direct conversation, for post_to: dm:{inbound.sender.key}")
    return lines
