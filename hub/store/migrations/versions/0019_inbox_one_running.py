"""inbox: at most one running turn per Anima and conversation, held by a partial unique
index rather than by one process's mailbox lanes (docs/scale.md)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 19:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None

RUNNING = sa.text("status = 'processing'")


def upgrade() -> None:
    # A hub stopped mid-turn leaves rows `processing` (its next start opens them again):
    # two of one conversation would stop the index, so they are opened here first.
    op.execute(
        "UPDATE inbox SET status = 'received', interrupted = interrupted + 1 "
        "WHERE status = 'processing'"
    )
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.create_index(
            'ux_inbox_one_running',
            ['anima', 'conversation'],
            unique=True,
            sqlite_where=RUNNING,
            postgresql_where=RUNNING,
        )


def downgrade() -> None:
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.drop_index('ux_inbox_one_running')
