"""delivery: when the chunk being sent went out (a send a stop may have cut off)

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 01:40:00
"""

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('delivery', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sending_since', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('delivery', schema=None) as batch_op:
        batch_op.drop_column('sending_since')
