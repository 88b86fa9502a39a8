"""Alembic environment: runs on the connection hub.store.db.migrate passes in."""

from alembic import context
from sqlmodel import SQLModel

import hub.store.models  # noqa: F401  (registers the tables on SQLModel.metadata)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
