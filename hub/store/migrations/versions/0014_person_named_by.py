"""person.named_by: who gave the person their name (an admin), or '' (a platform account)

A person the hub made from a stranger's first message carries the platform's display name,
which anyone can choose; only a name an admin gave identifies a person (docs/people.md).
Existing rows are told apart by the account the person was made with: the earliest account
created with or after the person row (accounts merged in from older people are older). A
web account made together with the person is an admin's `named` (an invite, `user`, the
owner); anything else came from a platform.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07 03:00:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('person', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                'named_by',
                sqlmodel.sql.sqltypes.AutoString(length=200),
                nullable=False,
                server_default='',
            )
        )
    bind = op.get_bind()
    people = bind.execute(sa.text('SELECT id, created_at FROM person')).all()
    for person_id, created_at in people:
        origin = bind.execute(
            sa.text(
                'SELECT platform, user_id FROM identity WHERE person_id = :p '
                'AND created_at >= :at ORDER BY created_at LIMIT 1'
            ),
            {'p': person_id, 'at': created_at},
        ).first()
        if origin is not None and origin[0] == 'web' and origin[1] == person_id:
            bind.execute(
                sa.text("UPDATE person SET named_by = 'legacy' WHERE id = :p"), {'p': person_id}
            )


def downgrade() -> None:
    with op.batch_alter_table('person', schema=None) as batch_op:
        batch_op.drop_column('named_by')
