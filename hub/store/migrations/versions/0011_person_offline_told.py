"""person: when the offline mode first explained itself to them

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 08:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('person', schema=None) as batch_op:
        batch_op.add_column(sa.Column('offline_told_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('person', schema=None) as batch_op:
        batch_op.drop_column('offline_told_at')
