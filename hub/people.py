"""Who is talking: the person an authenticated request speaks as (docs/people.md)."""

from __future__ import annotations

from hub.adapter import Caller, NotPermitted
from hub.identity import WEB, IdentityService, PersonView
from hub.messages import PlatformUser
from hub.store.db import Database
from hub.store.models import AuditEntry


class People:
    def __init__(self, db: Database, identity: IdentityService) -> None:
        self._db = db
        self._identity = identity

    def person(self, caller: Caller, user: str | None) -> PersonView:
        """The caller, or the person named `user`. Only a caller who may act for others
        names someone else (created on first mention), and that is audited each time."""
        if user is None:
            return self._identity.by_id(caller.person_id)
        found = self._identity.find(user)
        if found is not None and found.id == caller.person_id:
            return found  # naming oneself, in any case
        if not caller.may_act_for_others:
            raise NotPermitted(
                f"a {caller.kind} speaks only for its own person ({caller.name}); "
                "`user` is for the owner and the admin token"
            )
        target = found or self._identity.named(user)
        self.audit(caller, "person.on_behalf", target.id, {"user": user})
        return target

    def audit(
        self, caller: Caller, action: str, target: str, detail: dict[str, str] | None = None
    ) -> None:
        with self._db.session() as session:
            session.add(
                AuditEntry(
                    actor=f"{caller.kind.value}:{caller.person_id}",
                    where="api",
                    action=action,
                    target=target,
                    detail=detail or {},
                )
            )

    def speaker(self, caller: Caller, platform: str, user: str | None) -> PlatformUser:
        if platform != WEB:
            raise ValueError(f"only the web platform takes its people from the hub, not {platform}")
        return self._identity.web_user(self.person(caller, user))
