"""lease and hub_worker: leases with a fencing epoch on the database's clock, and the
workers that take them (docs/scale.md; several workers are not wired to them yet)

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 19:40:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('lease',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('holder', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('epoch', sa.Integer(), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    op.create_table('hub_worker',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )


def downgrade() -> None:
    op.drop_table('hub_worker')
    op.drop_table('lease')
