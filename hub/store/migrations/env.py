"""Alembic environment: runs on the connection hub.store.db.migrate passes in."""

from alembic import context
from sqlmodel import SQLModel

import hub.store.models  # noqa: F401  (registers the tables on SQLModel.metadata)

connection = context.config.attributes["connection"]
# APScheduler creates and owns its job table (hub/schedule/scheduler.py); autogenerate leaves it
# alone.
FOREIGN_TABLES = {"scheduler_job"}


def include_object(obj: object, name: str | None, type_: str, *_: object) -> bool:
    return not (type_ == "table" and name in FOREIGN_TABLES)


context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    include_object=include_object,
)
with context.begin_transaction():
    context.run_migrations()
