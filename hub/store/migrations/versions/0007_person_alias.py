"""person_alias: people merged into another by linking

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 01:45:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('person_alias',
    sa.Column('alias', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('person_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['person_id'], ['person.id'], ),
    sa.PrimaryKeyConstraint('alias')
    )
    with op.batch_alter_table('person_alias', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_person_alias_person_id'), ['person_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('person_alias', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_person_alias_person_id'))
    op.drop_table('person_alias')
