"""inbox: interrupted turns counted apart from failed ones

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 22:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('interrupted', sa.Integer(), nullable=False, server_default='0')
        )


def downgrade() -> None:
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.drop_column('interrupted')
