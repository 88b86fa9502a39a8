"""delivery: `answers` (the event id a delivery answers) apart from `reply_to` (the platform
id of that message, which a reply quotes); `reply_to` held the event id until now

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07 19:10:00
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('delivery', schema=None) as batch_op:
        batch_op.add_column(sa.Column('answers', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True))
    op.execute('UPDATE delivery SET answers = reply_to')
    # The platform id of the answered message is its inbox row's; what answers none quotes none.
    op.execute(
        'UPDATE delivery SET reply_to = '
        '(SELECT inbox.reply_to FROM inbox WHERE inbox.id = delivery.inbox_id)'
    )


def downgrade() -> None:
    op.execute('UPDATE delivery SET reply_to = answers')
    with op.batch_alter_table('delivery', schema=None) as batch_op:
        batch_op.drop_column('answers')
