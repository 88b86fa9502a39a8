"""heartbeat_run: each Anima's last heartbeat and its outcome; turn.person_id indexed

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 09:00:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('heartbeat_run',
    sa.Column('anima', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('outcome', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('anima')
    )
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_turn_person_id'), ['person_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('turn', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_turn_person_id'))
    op.drop_table('heartbeat_run')
