"""inbox: on PostgreSQL, NOTIFY turn_events with the row's id when its status or attempts
change, so the worker a person's browser waits on hears the end of a turn that ran on
another worker (hub/inbound/shared.py; docs/scale.md, "Live turns across workers")

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07 22:30:00
"""

from alembic import op

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None

PG_FUNCTION = """
CREATE FUNCTION hub_notify_turn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('turn_events', NEW.id);
    RETURN NULL;
END
$$
"""
PG_TRIGGER = """
CREATE TRIGGER hub_notify_turn AFTER UPDATE ON inbox FOR EACH ROW
WHEN (NEW.status IS DISTINCT FROM OLD.status OR NEW.attempts IS DISTINCT FROM OLD.attempts)
EXECUTE FUNCTION hub_notify_turn()
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(PG_FUNCTION)
        op.execute(PG_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("DROP TRIGGER hub_notify_turn ON inbox")
        op.execute("DROP FUNCTION hub_notify_turn()")
