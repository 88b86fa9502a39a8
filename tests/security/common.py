"""What the forgery and redelivery suites read back: the hub's tables and its routes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import func
from sqlmodel import select

from hub.app import Hub
from hub.store.models import AuditEntry, DeliveryRow, Identity, InboxItem, Person, Turn

# Every table a request could leave something in: the inbox row, the reply, the turn log,
# the audit log (commands), and the person an unknown sender becomes.
_TABLES: tuple[Any, ...] = (InboxItem, DeliveryRow, Turn, AuditEntry, Person, Identity)


def footprint(hub: Hub) -> dict[str, int]:
    """How many rows each table holds."""
    with hub.db.session() as session:
        return {
            table.__tablename__: session.exec(select(func.count()).select_from(table)).one()
            for table in _TABLES
        }


def inbox(hub: Hub) -> list[InboxItem]:
    with hub.db.session() as session:
        return list(session.exec(select(InboxItem)).all())


def deliveries(hub: Hub) -> list[DeliveryRow]:
    with hub.db.session() as session:
        return list(session.exec(select(DeliveryRow)).all())


def counts(values: Iterable[str]) -> Counter[str]:
    return Counter(values)


def route_paths(routes: Sequence[Any], prefix: str = "") -> Iterator[tuple[str, frozenset[str]]]:
    """(path, methods) of every route, routers included in others flattened (a mount's
    methods are empty)."""
    for route in routes:
        original = getattr(route, "original_router", None)
        if original is not None:  # FastAPI's included router
            yield from route_paths(original.routes, prefix + route.include_context.prefix)
            continue
        methods = getattr(route, "methods", None) or set()
        yield prefix + route.path, frozenset(methods)
