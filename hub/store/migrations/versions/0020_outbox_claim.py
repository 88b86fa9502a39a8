"""outbox_claim: the one sender of an address at a time, as a row with an expiry and an
epoch, so that several hub workers can share the outbox (docs/scale.md, "The outbox")

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07 22:00:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('outbox_claim',
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('holder', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('epoch', sa.Integer(), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('address')
    )


def downgrade() -> None:
    op.drop_table('outbox_claim')
