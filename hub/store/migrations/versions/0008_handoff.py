"""handoff: where a person left off, offered once

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 04:35:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('handoff',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('person_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('anima', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('conversation', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('where', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('last_turn_id', sa.Integer(), nullable=False),
    sa.Column('discussed', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('open_questions', sa.JSON(), nullable=False),
    sa.Column('next_steps', sa.JSON(), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('offered_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('offered_in', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.ForeignKeyConstraint(['person_id'], ['person.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('conversation', 'anima', 'last_turn_id')
    )
    with op.batch_alter_table('handoff', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_handoff_person_id'), ['person_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('handoff', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_handoff_person_id'))
    op.drop_table('handoff')
