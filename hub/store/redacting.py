"""Every write of kept text to the database passes through `redact` (hub/redaction/redact.py).

Writers redact what they write (the turn log, deliveries, the inbox once a turn is done),
but text reaches the database from many places: the audit log's details, task titles,
bodies, results and their events, a heartbeat's outcome, a model's error text in a row's
`error`. Rather than trusting each writer, the engine redacts the columns below in every
INSERT and UPDATE, Core or ORM, before it is sent: a writer added later cannot forget.

Not here: the inbox's `text` and `raw`, which the Anima reads while its turn runs (the
inbox redacts them when the turn closes, hub/turns/inbox.py); and the people, identities and
credentials tables, which hold names and hashes, not text a person wrote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.sql.dml import Insert, Update
from sqlalchemy.sql.elements import BindParameter

from hub.redaction.redact import redact_json

# table -> the columns that keep text a person, a model or an error wrote
KEPT_TEXT: Mapping[str, frozenset[str]] = {
    "audit": frozenset({"detail", "target"}),
    "task": frozenset({"title", "details", "result"}),
    "task_event": frozenset({"note"}),
    "turn": frozenset({"text"}),
    "heartbeat_run": frozenset({"outcome"}),
    # not `chunks`: what is sent, rendered from the text (redacted at enqueue) with the
    # platform's own markup and ids, which must reach the platform as they are
    "delivery": frozenset({"text", "error"}),
    "inbox": frozenset({"error"}),
    "handoff": frozenset({"discussed", "open_questions", "next_steps"}),
}

Params = Sequence[Mapping[str, Any]]


def install(engine: Engine) -> None:
    event.listen(engine, "before_execute", _redact_write, retval=True)


def _redact_write(
    _conn: Any,
    statement: Any,
    multiparams: Params,
    params: Mapping[str, Any],
    _options: Any,
) -> tuple[Any, Params, Mapping[str, Any]]:
    if not isinstance(statement, Insert | Update):
        return statement, multiparams, params
    columns = KEPT_TEXT.get(statement.table.name)  # type: ignore[union-attr]
    if columns is None:
        return statement, multiparams, params
    statement = _redact_values(statement, columns)
    multiparams = [_redact_params(each, columns) for each in multiparams]
    return statement, multiparams, _redact_params(params, columns)


def _redact_params(params: Mapping[str, Any], columns: frozenset[str]) -> Mapping[str, Any]:
    if not any(key in columns for key in params):
        return params
    return {key: redact_json(v) if key in columns else v for key, v in params.items()}


def _redact_values(statement: Insert | Update, columns: frozenset[str]) -> Insert | Update:
    """Values given with `.values(...)` live in the statement itself, as bound parameters
    (SQLAlchemy's `_values`); a second `.values()` with the redacted ones replaces them."""
    given: Mapping[Any, Any] = getattr(statement, "_values", None) or {}
    clean: dict[str, Any] = {}
    for key, value in given.items():
        name = key if isinstance(key, str) else getattr(key, "key", None)
        if name in columns and isinstance(value, BindParameter):
            redacted = redact_json(value.value)
            if redacted != value.value:
                clean[name] = redacted
    return statement.values(**clean) if clean else statement
