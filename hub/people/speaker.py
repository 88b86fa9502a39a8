"""Who is talking: the person an authenticated request speaks as (docs/people.md)."""

from __future__ import annotations

from hub.adapter import Caller, NotPermitted
from hub.messages import PlatformUser
from hub.people.identity import WEB, IdentityService, PersonView, name_key
from hub.store.db import Database
from hub.store.models import AuditEntry


class People:
    def __init__(self, db: Database, identity: IdentityService) -> None:
        self._db = db
        self._identity = identity

    def person(self, caller: Caller, user: str | None) -> PersonView:
        """The caller, or the person `user` names. Only a caller who may act for others
        names someone else, audited each time: by id, or by a name only an admin gave and
        nobody else goes by; a name that matches a platform's display name or several
        people is a 409 with the candidates (`AmbiguousName`); one that matches nobody is
        someone new, named so by the caller."""
        if user is None:
            return self._identity.by_id(caller.person_id)
        me = self._identity.by_id(caller.person_id)
        if user == me.id or name_key(user) == name_key(me.display_name):
            return me  # naming oneself, in any case: it picks no one else
        if not caller.may_act_for_others:
            raise NotPermitted(
                f"a {caller.kind} speaks only for its own person ({caller.name}); "
                "`user` is for the owner and the admin token"
            )
        target = self._identity.named(user, actor_of(caller))
        self.audit(caller, "person.on_behalf", target.id, {"user": user})
        return target

    def audit(
        self, caller: Caller, action: str, target: str, detail: dict[str, str] | None = None
    ) -> None:
        with self._db.session() as session:
            session.add(
                AuditEntry(
                    actor=actor_of(caller),
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


def actor_of(caller: Caller) -> str:
    """Who did it, as the audit log and `named_by` say: `owner:u-3f1c9a2b7e`."""
    return f"{caller.kind.value}:{caller.person_id}"
