"""schedule_run: each slot of a scheduled job claimed by a row before it runs, so that each
(job, slot) runs once across restarts and workers, and a skipped slot is recorded
(hub/schedule/slots.py; docs/scale.md, "Schedules without a leader")

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-08 01:00:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('schedule_run',
    sa.Column('job_key', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('slot_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('anima', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('worker', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('stands_for', sa.Integer(), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('job_key', 'slot_at')
    )
    op.create_index(op.f('ix_schedule_run_anima'), 'schedule_run', ['anima'], unique=False)
    op.create_index(op.f('ix_schedule_run_slot_at'), 'schedule_run', ['slot_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_schedule_run_slot_at'), table_name='schedule_run')
    op.drop_index(op.f('ix_schedule_run_anima'), table_name='schedule_run')
    op.drop_table('schedule_run')
