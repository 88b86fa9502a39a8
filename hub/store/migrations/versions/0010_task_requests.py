"""task: the request a task came from (one task per request), and when it was escalated

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 08:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.add_column(sa.Column('request_key', sa.String(length=300), nullable=True))
        batch_op.add_column(sa.Column('escalated_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_task_request_key', ['request_key'], unique=True)


def downgrade() -> None:
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.drop_index('ix_task_request_key')
        batch_op.drop_column('escalated_at')
        batch_op.drop_column('request_key')
