"""People over HTTP (docs/people.md): who am I, the owner, sign-in links, sessions, tokens.

Everything but /api/me and /api/signout is for the owner and the admin token
(`hub/api/auth.py` keeps a person's own token or session out of it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from pydantic import BaseModel, Field

from hub.adapter import Caller, caller_of
from hub.api.auth import SESSION_COOKIE, session_secret
from hub.api.routes import HubDep
from hub.app import Hub
from hub.memory.profiles import Learned
from hub.people.credentials import CredentialInfo
from hub.people.erasure import Forgotten
from hub.people.identity import PersonView
from hub.people.linking import PLATFORMS, Account, LinkRefused
from hub.people.speaker import actor_of as actor_of
from hub.store.models import CredentialKind

router = APIRouter(prefix="/api")


def get_caller(request: Request) -> Caller:
    return caller_of(request.scope)


CallerDep = Annotated[Caller, Depends(get_caller)]


class OwnerIn(BaseModel):
    # A person id, or a name (hub/people/names.py: a name a platform says, or several
    # people go by, is a 409 with the candidates).
    name: str = Field(min_length=1, max_length=200)
    # False: a name that matches nobody is a 404, not a new person.
    create: bool = True
    # True: someone new by that name, whoever else goes by it (the CLI's `--new`, and the
    # way out of a 409 whose candidates are all someone else).
    new: bool = False


class InviteIn(BaseModel):
    new: bool = False  # as OwnerIn's: a new person by that name, never a candidate


class TokenIn(BaseModel):
    person: str = Field(min_length=1, max_length=200)
    label: str = Field(default="", max_length=200)
    create: bool = True  # as OwnerIn's
    new: bool = False  # as OwnerIn's


def _person(hub: Hub, name: str) -> PersonView:
    person = hub.identity.find(name)
    if person is None:
        raise HTTPException(404, f"no person named {name!r}")
    return person


def _named(hub: Hub, caller: Caller, name: str, create: bool, new: bool = False) -> PersonView:
    """The person `name` means; someone new by that name when `new` says so, or it means
    nobody and `create` allows it (a 404 otherwise)."""
    if new:
        return hub.identity.create(name, actor_of(caller))
    found = hub.identity.find(name)
    if found is not None:
        return found
    if not create:
        raise HTTPException(404, f"no person named {name!r}")
    return hub.identity.create(name, actor_of(caller))


def _platform(name: str) -> str:
    platform = name.lower()
    if platform not in PLATFORMS:
        raise HTTPException(422, f"no platform named {name!r}: one of {', '.join(PLATFORMS)}")
    return platform


def when(at: datetime | None) -> str | None:
    return at.isoformat(timespec="seconds") if at is not None else None


def _credential(info: CredentialInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "person": info.person_id,
        "label": info.label,
        "created_by": info.created_by,
        "created_at": when(info.created_at),
        "expires_at": when(info.expires_at),
        "last_used_at": when(info.used_at),
        "revoked_at": when(info.revoked_at),
    }


@router.get("/me")
def me(caller: CallerDep, hub: HubDep) -> dict[str, Any]:
    """Who this request speaks as; the web chat shows it and opens `default_anima` first
    (the person's own, else the hub's; "" when neither exists). A session's page key is
    never in it: the page got it at sign-in, and a cookie planted in the browser must not
    be able to ask for it (hub/people/credentials.py `page_key`)."""
    own = hub.identity.by_id(caller.person_id).default_anima
    default = next((a for a in (own, hub.settings.hub.default_anima) if a in hub.animas), "")
    return {
        "id": caller.person_id,
        "name": caller.name,
        "via": caller.kind.value,
        "may_act_for_others": caller.may_act_for_others,
        "default_anima": default,
    }


@router.post("/signout", status_code=204)
def signout(request: Request, hub: HubDep) -> Response:
    secret = session_secret(request.headers)
    if secret is not None:
        hub.access.revoke_secret(secret)
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


class AccountIn(BaseModel):
    platform: str = Field(min_length=1, max_length=32)
    user_id: str = Field(min_length=1, max_length=128)
    display_name: str = Field(default="", max_length=200)
    # True: the account's person is merged in even when they have more than this account
    # (other accounts, tokens, roles); false, that is a 409 naming them.
    merge: bool = False


class MergeIn(BaseModel):
    into: str = Field(min_length=1, max_length=200)


@router.get("/people")
def people(hub: HubDep) -> list[dict[str, Any]]:
    return [
        {
            "id": p.id,
            "name": p.display_name,
            "roles": list(p.roles),
            "platforms": list(hub.linking.platforms(p.id)),
        }
        for p in hub.identity.everyone()
    ]


@router.get("/people/owner")
def owner(hub: HubDep) -> dict[str, str]:
    person = hub.identity.owner()
    return {"id": person.id, "name": person.display_name}


@router.put("/people/owner")
def set_owner(body: OwnerIn, hub: HubDep, caller: CallerDep) -> dict[str, str]:
    person = hub.identity.set_owner(_named(hub, caller, body.name, body.create, body.new).id)
    hub.people.audit(caller, "person.owner", person.id)
    return {"id": person.id, "name": person.display_name}


@router.get("/people/audit")
def audit(hub: HubDep) -> list[dict[str, Any]]:
    """People whose id the hub made from a platform's display name and that collide with a
    name the admin used (config, an invite, the owner): a stranger may have taken it."""
    return [
        {
            "id": s.person.id,
            "name": s.person.name,
            "accounts": list(s.person.accounts),
            "why": list(s.why),
            "split": list(s.split),
        }
        for s in hub.identity.squatted(
            [*hub.settings.hub.admins, *hub.settings.people.allowlist], hub.settings.hub.owner
        )
    ]


@router.post("/people/{name}/invite", status_code=201)
def invite(
    name: str, hub: HubDep, caller: CallerDep, body: InviteIn | None = None
) -> dict[str, Any]:
    """A one-time sign-in link for the person `name` means (an id; a name is asked about,
    409 with the candidates, when it is a platform's or several people's), or someone new
    by that name (`created` says so; `new` makes them new whoever else goes by it)."""
    found = None if body is not None and body.new else hub.identity.find(name)
    created = found is None
    person = found or hub.identity.create(name, actor_of(caller))
    issued = hub.access.create_signin(person.id, created_by=caller.person_id)
    hub.people.audit(caller, "person.invite", person.id)
    # An admin's invite lets the person in (hub/people/admission.py): their web account, made by
    # the hub, would not.
    hub.admission.let_in(person.id)
    return {
        "person": person.id,
        "name": person.display_name,
        "created": created,
        "url": f"{hub.settings.server.link_base()}/signin/{issued.secret}",
        "expires_at": when(issued.expires_at),
    }


@router.get("/people/{name}/sessions")
def sessions(name: str, hub: HubDep) -> list[dict[str, Any]]:
    person = _person(hub, name)
    return [_credential(i) for i in hub.access.listing(CredentialKind.SESSION, person.id)]


@router.delete("/sessions/{credential_id}")
def revoke_session(credential_id: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    return _revoke(hub, caller, credential_id, CredentialKind.SESSION)


@router.post("/tokens", status_code=201)
def create_token(body: TokenIn, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """A person's own API token (the person created if new, unless `create` is false); its
    secret is in this answer only."""
    person = _named(hub, caller, body.person, body.create, body.new)
    issued = hub.access.create_token(person.id, body.label, created_by=caller.person_id)
    hub.people.audit(caller, "token.create", issued.id)
    hub.admission.let_in(person.id)
    return {"id": issued.id, "person": person.id, "token": issued.secret}


@router.get("/tokens")
def tokens(hub: HubDep, person: str | None = None) -> list[dict[str, Any]]:
    person_id = _person(hub, person).id if person is not None else None
    return [_credential(i) for i in hub.access.listing(CredentialKind.API_TOKEN, person_id)]


@router.delete("/tokens/{credential_id}")
def revoke_token(credential_id: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    return _revoke(hub, caller, credential_id, CredentialKind.API_TOKEN)


def _revoke(hub: Hub, caller: Caller, credential_id: str, kind: CredentialKind) -> dict[str, Any]:
    info = hub.access.revoke(credential_id, kind)
    if info is None:
        raise HTTPException(404, f"no {kind.value.replace('_', ' ')} {credential_id!r}")
    hub.people.audit(caller, f"{kind.value}.revoke", credential_id)
    return _credential(info)


@router.get("/people/{name}")
def person(name: str, hub: HubDep) -> dict[str, Any]:
    """One person: roles, linked accounts, and the ids merged into them."""
    return _shown(hub, _person(hub, name))


@router.post("/people/{name}/accounts")
def link_account(name: str, body: AccountIn, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """Link a platform account to the person: its former person is merged in if they have
    nothing else, or `merge` says so (409 otherwise)."""
    account = Account(_platform(body.platform), body.user_id, body.display_name)
    target = _person(hub, name)
    actor = actor_of(caller)
    return _shown(hub, _linked(lambda: hub.linking.attach(target.id, account, actor, body.merge)))


@router.delete("/people/{name}/accounts/{account:path}")
def unlink_account(name: str, account: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """The person's account becomes a person of its own: `account` is a platform (the
    person's one account there) or `platform:user_id` (one of several, after a merge)."""
    platform, sep, user_id = account.partition(":")
    if sep and not user_id:
        raise HTTPException(422, f"{account!r}: the account is PLATFORM or PLATFORM:USER_ID")
    target, platform = _person(hub, name), _platform(platform)
    who, actor = target.display_name, actor_of(caller)
    split = _linked(lambda: hub.linking.unlink(target.id, platform, actor, who, user_id))
    return {"person": _shown(hub, hub.identity.by_id(target.id)), "split": _shown(hub, split)}


@router.post("/people/{name}/merge")
def merge(name: str, body: MergeIn, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """`name` becomes part of `into`: accounts, profile, memory."""
    source, into = _person(hub, name), _person(hub, body.into)
    return _shown(
        hub, _linked(lambda: hub.linking.merge(source.id, into.id, actor_of(caller), "admin merge"))
    )


def _linked(change: Callable[[], PersonView]) -> PersonView:
    try:
        return change()
    except LinkRefused as exc:
        raise HTTPException(409, str(exc)) from None


def _shown(hub: Hub, person: PersonView) -> dict[str, Any]:
    return {
        "id": person.id,
        "name": person.display_name,
        "roles": list(person.roles),
        "accounts": [
            {"platform": a.platform, "user_id": a.user_id, "name": a.display_name}
            for a in hub.linking.accounts(person.id)
        ],
        "aliases": list(hub.identity.aliases_of(person.id)),
    }


@router.get("/pairing")
def pairing(hub: HubDep) -> list[dict[str, Any]]:
    """Strangers waiting to be let in to DMs (hub/people/admission.py)."""
    return [
        {"id": r.id, "person": r.person_id, "where": r.where, "since": when(r.since)}
        for r in hub.admission.requests()
    ]


@router.post("/pairing/{code}/approve")
def approve(code: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    person = hub.admission.approve(code, actor_of(caller))
    if person is None:
        raise HTTPException(404, "no one is waiting with that code")
    return _shown(hub, person)


@router.get("/me/about")
def about_me(hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """What the Animas know about the caller: profile, accounts, private memories per Anima."""
    person = hub.identity.by_id(caller.person_id)
    profiles = hub.memory.profiles if hub.memory is not None else None
    return {
        **_shown(hub, person),
        "learned": [
            asdict(Learned.parse(line))
            for line in (profiles.learned(person.id) if profiles is not None else [])
        ],
        "private_memories": hub.private_counts(person),
    }


@router.post("/me/forget")
async def forget_me(hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """The caller's private memory, learned facts and DM conversations, deleted."""
    person = hub.identity.by_id(caller.person_id)
    return _forgotten(await hub.forget_person(person, actor_of(caller)))


@router.post("/people/{name}/forget")
async def forget(name: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """(Admins) forget a person: what `/forget-me` does for them."""
    return _forgotten(await hub.forget_person(_person(hub, name), actor_of(caller)))


def _forgotten(gone: Forgotten) -> dict[str, Any]:
    return {
        "memories": gone.memories,
        "facts": gone.facts,
        "turns": gone.turns,
        "handoffs": gone.handoffs,
    }


@router.get("/people/{name}/handoffs")
def handoffs(name: str, hub: HubDep) -> list[dict[str, Any]]:
    """(Admins) where the person left off with each Anima: offered once, then kept as such."""
    return _handoffs(hub, _person(hub, name))


@router.get("/me/handoffs")
def my_handoffs(hub: HubDep, caller: CallerDep) -> list[dict[str, Any]]:
    """Where the caller left off with each Anima."""
    return _handoffs(hub, hub.identity.by_id(caller.person_id))


def _handoffs(hub: Hub, person: PersonView) -> list[dict[str, Any]]:
    return [
        {
            "id": h.id,
            "anima": h.anima,
            "where": h.where,
            "ended_at": when(h.ended_at),
            "expires_at": when(h.expires_at),
            "status": h.status.value,
            "offered_at": when(h.offered_at),
            "discussed": h.note.discussed,
            "open_questions": list(h.note.open_questions),
            "next_steps": list(h.note.next_steps),
        }
        for h in hub.handoffs.listing(person.id, hub.clock.now())
    ]
