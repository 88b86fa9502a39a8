"""Credentials that stand for a person: API tokens, one-time sign-in links, web sessions.

Each secret comes from `secrets` and is shown once; the table keeps only its SHA-256, so a
copy of the database signs nobody in. A sign-in link's token is single use and expires; a
session is a cookie (HttpOnly, SameSite) that lives until it expires or is revoked, and is
worth nothing without its page key (`page_key`), which only the hub's own page holds.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import ColumnElement, update
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from hub.messages import Address
from hub.store.db import Database
from hub.store.models import Credential, CredentialKind

SIGNIN_TTL = timedelta(minutes=15)
# The owner's link (`animahub start`, `animahub signin`) is printed in the owner's own
# terminal, and may be clicked a while after the hub started; it is still single use.
OWNER_SIGNIN_TTL = timedelta(days=1)
OWNER_LABEL = "owner"  # the label of an owner's sign-in link, and of the session it opens
SESSION_TTL = timedelta(days=30)
TOKEN_PREFIX = "ahp_"  # recognisable in a leaked paste; the rest is 256 random bits
_ID_PREFIX = {
    CredentialKind.API_TOKEN: "t",
    CredentialKind.SIGNIN: "l",
    CredentialKind.SESSION: "s",
    CredentialKind.LINK: "k",
    CredentialKind.PAIRING: "p",
}
PAIRING_TTL = timedelta(days=7)
LINK_TTL = timedelta(minutes=10)
LINK_PENDING = 3  # at most this many `/link` codes per person wait at once
# A session's last use is written at most this often, not on every request.
_TOUCH_EVERY = timedelta(minutes=5)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def page_key(session_secret: str) -> str:
    """The second half of a session: handed to the page once, in the answer to the
    sign-in form (hub/api/signin.py), kept in the hub's origin's local storage and sent in
    `X-Page-Key` with every request. Cookies do not separate ports, so a page on another port
    of the same host can plant its own session cookie in the owner's browser; it cannot
    write the hub's origin's storage, so its cookie arrives without the key and is refused.
    Derived from the session's secret, so nothing more is stored for it."""
    return hmac.new(session_secret.encode(), b"animahub page key", hashlib.sha256).hexdigest()


class Refused(StrEnum):
    """Why a sign-in link was not accepted: each is its own page."""

    UNKNOWN = "This sign-in link is not valid."
    USED = "This sign-in link was already used. Ask for a new one."
    EXPIRED = "This sign-in link has expired. Ask for a new one."


class SignInRefused(Exception):
    def __init__(self, reason: Refused) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Issued:
    """A credential just made: the secret, which exists nowhere else from now on."""

    id: str
    secret: str
    person_id: str
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class CredentialInfo:
    id: str
    kind: str
    person_id: str
    label: str
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    used_at: datetime | None
    revoked_at: datetime | None


class Access:
    def __init__(self, db: Database, now: Callable[[], datetime]) -> None:
        self._db = db
        self._now = now

    def _issue(
        self,
        kind: CredentialKind,
        person_id: str,
        secret: str,
        ttl: timedelta | None,
        label: str = "",
        created_by: str = "",
    ) -> Issued:
        now = self._now()
        row = Credential(
            id=f"{_ID_PREFIX[kind]}-{secrets.token_hex(6)}",
            kind=kind,
            secret_hash=digest(secret),
            person_id=person_id,
            label=label,
            created_by=created_by,
            created_at=now,
            expires_at=now + ttl if ttl is not None else None,
        )
        with self._db.session() as session:
            session.add(row)
        return Issued(row.id, secret, person_id, row.expires_at)

    def create_token(self, person_id: str, label: str = "", created_by: str = "") -> Issued:
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        return self._issue(CredentialKind.API_TOKEN, person_id, secret, None, label, created_by)

    def create_signin(self, person_id: str, created_by: str = "") -> Issued:
        secret = secrets.token_urlsafe(32)
        return self._issue(
            CredentialKind.SIGNIN, person_id, secret, SIGNIN_TTL, created_by=created_by
        )

    def create_owner_signin(self, owner_id: str, created_by: str) -> Issued:
        """A sign-in link whose session has the owner's rights (hub/api/auth.py); the
        caller checks `owner_id` is the hub's owner."""
        secret = secrets.token_urlsafe(32)
        return self._issue(
            CredentialKind.SIGNIN, owner_id, secret, OWNER_SIGNIN_TTL, OWNER_LABEL, created_by
        )

    def _live(self, kind: CredentialKind, secret: str) -> Credential | None:
        with self._db.session() as session:
            row = session.exec(
                select(Credential).where(
                    Credential.secret_hash == digest(secret), Credential.kind == kind
                )
            ).first()
        if row is None or row.revoked_at is not None:
            return None
        if row.expires_at is not None and row.expires_at <= self._now():
            return None
        return row

    def check_signin(self, secret: str) -> str:
        """The person a sign-in link is for, without using it; raises `SignInRefused`."""
        return self._signin_row(secret).person_id

    def signin_link(self, secret: str) -> CredentialInfo:
        """A live sign-in link, without using it (its label says an owner's); raises
        `SignInRefused`."""
        return _info(self._signin_row(secret))

    def _signin_row(self, secret: str) -> Credential:
        with self._db.session() as session:
            row = session.exec(
                select(Credential).where(
                    Credential.secret_hash == digest(secret),
                    Credential.kind == CredentialKind.SIGNIN,
                )
            ).first()
        if row is None or row.revoked_at is not None:
            raise SignInRefused(Refused.UNKNOWN)
        if row.used_at is not None:
            raise SignInRefused(Refused.USED)
        if row.expires_at is None or row.expires_at <= self._now():
            raise SignInRefused(Refused.EXPIRED)
        return row

    def redeem_signin(self, secret: str) -> Issued:
        """Uses the link (once: the update only matches an unused row) and opens a session,
        an owner's session if the link was the owner's."""
        link = self._signin_row(secret)
        if not self._use_once(col(Credential.secret_hash) == digest(secret)):
            raise SignInRefused(Refused.USED)  # redeemed by a concurrent request in between
        return self._issue(
            CredentialKind.SESSION,
            link.person_id,
            secrets.token_urlsafe(32),
            SESSION_TTL,
            label=link.label,
        )

    def create_link(self, person_id: str, code: str, label: str = "") -> Issued:
        """Store a `/link` code for the person (`label`: where it was asked for); beyond
        `LINK_PENDING` their oldest goes."""
        now = self._now()
        with self._db.session() as session:
            pending = session.exec(
                _waiting(CredentialKind.LINK, person_id, now).order_by(col(Credential.created_at))
            ).all()
            for row in pending[: max(0, len(pending) - LINK_PENDING + 1)]:
                row.revoked_at = now
                session.add(row)
        return self._issue(CredentialKind.LINK, person_id, code, LINK_TTL, label=label)

    def use_code(self, kind: CredentialKind, code: str) -> tuple[str, str] | None:
        """The person a live one-time code of `kind` (a `/link` code, a pairing code)
        stands for, and its label, using it up (once, also when two use it at the same
        moment); None if unknown, used or expired."""
        row = self._live(kind, code)
        if row is None or row.used_at is not None:
            return None
        return (row.person_id, row.label) if self._use_once(col(Credential.id) == row.id) else None

    def _use_once(self, which: ColumnElement[bool]) -> bool:
        """Mark a one-time credential used; False when another use came first (the update
        matches an unused row only)."""
        with self._db.write() as conn:
            used = conn.execute(
                update(Credential)
                .where(which, col(Credential.used_at).is_(None))
                .values(used_at=self._now())
            )
        return used.rowcount == 1

    def pairing_of(self, person_id: str) -> Credential | None:
        """The person's live pairing request, if they have one."""
        with self._db.session() as session:
            return session.exec(_waiting(CredentialKind.PAIRING, person_id, self._now())).first()

    def create_pairing(self, person_id: str, code: str, label: str) -> Issued:
        return self._issue(CredentialKind.PAIRING, person_id, code, PAIRING_TTL, label=label)

    def session_person(self, secret: str) -> tuple[str, bool] | None:
        """The person a live session is for, and whether it was opened by an owner's link."""
        row = self._live(CredentialKind.SESSION, secret)
        if row is None:
            return None
        self._touch(row)
        return row.person_id, row.label == OWNER_LABEL

    def token_person(self, secret: str) -> str | None:
        row = self._live(CredentialKind.API_TOKEN, secret)
        if row is None:
            return None
        self._touch(row)
        return row.person_id

    def _touch(self, row: Credential) -> None:
        now = self._now()
        if row.used_at is not None and now - row.used_at < _TOUCH_EVERY:
            return
        with self._db.session() as session:
            session.execute(
                update(Credential).where(col(Credential.id) == row.id).values(used_at=now)
            )

    def listing(
        self, kind: CredentialKind, person_id: str | None = None, live_only: bool = True
    ) -> list[CredentialInfo]:
        query = select(Credential).where(Credential.kind == kind)
        if person_id is not None:
            query = query.where(Credential.person_id == person_id)
        with self._db.session() as session:
            rows = session.exec(query.order_by(col(Credential.created_at))).all()
        now = self._now()
        return [
            _info(r)
            for r in rows
            if not live_only
            or (r.revoked_at is None and (r.expires_at is None or r.expires_at > now))
        ]

    def revoke(self, credential_id: str, kind: CredentialKind) -> CredentialInfo | None:
        """Revokes one session or token by its public id; None when there is no such one."""
        with self._db.session() as session:
            row = session.get(Credential, credential_id)
            if row is None or row.kind != kind:
                return None
            if row.revoked_at is None:
                row.revoked_at = self._now()
                session.add(row)
            return _info(row)

    def revoke_secret(self, secret: str) -> None:
        """Signing out: the session of this cookie ends."""
        with self._db.session() as session:
            session.execute(
                update(Credential)
                .where(col(Credential.secret_hash) == digest(secret))
                .values(revoked_at=self._now())
            )


def where_label(address: Address) -> str:
    """A one-time code's label: where it was asked for, to answer there once it is used."""
    return f"{address.kind.value}|{address}"


def label_address(label: str) -> Address | None:
    kind, _, text = label.partition("|")
    try:
        return Address.parse(text, kind)
    except ValueError:
        return None


def _waiting(kind: CredentialKind, person_id: str, now: datetime) -> SelectOfScalar[Credential]:
    """A person's one-time credentials of `kind` not used, revoked or expired yet."""
    return select(Credential).where(
        Credential.person_id == person_id,
        Credential.kind == kind,
        col(Credential.used_at).is_(None),
        col(Credential.revoked_at).is_(None),
        col(Credential.expires_at) > now,
    )


def _info(row: Credential) -> CredentialInfo:
    return CredentialInfo(
        row.id,
        row.kind.value,
        row.person_id,
        row.label,
        row.created_by,
        row.created_at,
        row.expires_at,
        row.used_at,
        row.revoked_at,
    )
