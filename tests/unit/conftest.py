"""Fixtures shared by the unit tests (the database and home fixtures live in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hub.animas import AnimaRegistry
from hub.commands.handler import CommandParts, CommandService
from hub.commands.state import AnimaStates
from hub.delivery.outbox import Outbox
from hub.people.identity import IdentityService
from hub.roles import load_roles
from hub.store.db import Database
from hub.turns.inbox import Inbox
from tests.conftest import DEMO, make_settings
from tests.unit.commands_helpers import Parts, Recorder


@pytest.fixture
def parts(db: Database, home: Path) -> Iterator[Parts]:
    settings = make_settings(
        home,
        hub={"default_anima": "mika", "admins": ["slack:UROOT"], "timezone": "Asia/Tokyo"},
    )
    animas = AnimaRegistry(home / "animas", load_roles())
    for name, role, supervisor in DEMO:
        animas.create(name, role, supervisor)
    identity = IdentityService(db, home / "shared" / "users", ["slack:UROOT"], "Asia/Tokyo", "ja")
    states = AnimaStates(db, Inbox(db), Outbox(db, {}, settings.outbox))
    calls = Recorder()
    service = CommandService(
        CommandParts(
            db=db,
            inbox=Inbox(db),
            settings=settings,
            animas=animas,
            identity=identity,
            states=states,
            submit=calls.submit,
            heartbeat=calls.heartbeat,
        )
    )
    yield Parts(db, settings, animas, identity, states, service, calls)
