"""hub_version: a counter per kind of cached state (people, paused Animas), bumped by
triggers on the tables behind it, so every hub worker can tell its cache is stale (and,
on PostgreSQL, is told at once: the trigger also NOTIFYs `hub_changes`); and on PostgreSQL
a NOTIFY on `outbox` when deliveries are added, so another worker's outbox looks at once

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 22:10:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None

# Which table's writes make which cache stale (hub/store/versions.py).
WATCHED = {
    'person': 'people',
    'identity': 'people',
    'person_alias': 'people',
    'anima_state': 'anima_state',
}
EVENTS = ('INSERT', 'UPDATE', 'DELETE')

PG_FUNCTION = """
CREATE FUNCTION hub_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE hub_version SET version = version + 1 WHERE kind = TG_ARGV[0];
    PERFORM pg_notify('hub_changes', TG_ARGV[0]);
    RETURN NULL;
END
$$
"""


PG_NOTIFY = """
CREATE FUNCTION hub_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(TG_ARGV[0], '');
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    op.create_table('hub_version',
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=50), nullable=False),
    sa.Column('version', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('kind')
    )
    for kind in sorted(set(WATCHED.values())):
        op.execute(f"INSERT INTO hub_version (kind, version) VALUES ('{kind}', 1)")
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(PG_FUNCTION)
        for table, kind in WATCHED.items():
            op.execute(
                f"CREATE TRIGGER hub_version_{table} AFTER INSERT OR UPDATE OR DELETE ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION hub_bump_version('{kind}')"
            )
        op.execute(PG_NOTIFY)
        op.execute(
            "CREATE TRIGGER hub_notify_outbox AFTER INSERT ON delivery "
            "FOR EACH STATEMENT EXECUTE FUNCTION hub_notify('outbox')"
        )
        return
    for table, kind in WATCHED.items():
        for event in EVENTS:
            op.execute(
                f"CREATE TRIGGER hub_version_{table}_{event.lower()} AFTER {event} ON {table} "
                f"BEGIN UPDATE hub_version SET version = version + 1 WHERE kind = '{kind}'; END"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("DROP TRIGGER hub_notify_outbox ON delivery")
        op.execute("DROP FUNCTION hub_notify()")
        for table in WATCHED:
            op.execute(f"DROP TRIGGER hub_version_{table} ON {table}")
        op.execute("DROP FUNCTION hub_bump_version()")
    else:
        for table in WATCHED:
            for event in EVENTS:
                op.execute(f"DROP TRIGGER hub_version_{table}_{event.lower()}")
    op.drop_table('hub_version')
