"""task board: tasks a manager Anima delegates, and every transition of each

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 05:20:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('task',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('title', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('details', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('manager', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('assignee', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('requested_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('origin', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('report_to', sa.JSON(), nullable=False),
    sa.Column('due_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('depth', sa.Integer(), nullable=False),
    sa.Column('parent_id', sa.Integer(), nullable=True),
    sa.Column('result', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['parent_id'], ['task.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_task_assignee'), ['assignee'], unique=False)
        batch_op.create_index(batch_op.f('ix_task_manager'), ['manager'], unique=False)

    op.create_table('task_event',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('task_id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('from_state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.Column('to_state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.ForeignKeyConstraint(['task_id'], ['task.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('task_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_task_event_task_id'), ['task_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('task_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_task_event_task_id'))
    op.drop_table('task_event')
    with op.batch_alter_table('task', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_task_manager'))
        batch_op.drop_index(batch_op.f('ix_task_assignee'))
    op.drop_table('task')
