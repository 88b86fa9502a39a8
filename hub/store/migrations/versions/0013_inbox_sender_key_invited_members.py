"""inbox: an event is unique per sender; people an admin invited are members

An inbound's identity includes who sent it: the unique key of `inbox` becomes (platform,
sender_key, event_id), so a web client reusing another person's `message_id` gets a turn of
its own instead of that person's stored reply (docs/reliability.md).

A web account no longer lets its person into DMs on other platforms (the hub makes web
accounts itself, hub/admission.py); an admin's invite or API token does, as the role
`member`. People an admin gave a sign-in link or a token before get that role now, so they
are not held back on Telegram or LINE after this upgrade.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07 03:00:00
"""

import json

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

# Credentials made by the hub itself for the person (`/web`), or by nobody recorded.
_NOT_AN_ADMIN = ('', '/web')


def upgrade() -> None:
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.drop_constraint('uq_inbox_event', type_='unique')
        batch_op.create_unique_constraint(
            'uq_inbox_sender_event', ['platform', 'sender_key', 'event_id']
        )
    _invited_are_members()


def _invited_are_members() -> None:
    conn = op.get_bind()
    credential = sa.table(
        'credential',
        sa.column('person_id', sa.String),
        sa.column('kind', sa.String),
        sa.column('created_by', sa.String),
    )
    person = sa.table('person', sa.column('id', sa.String), sa.column('roles', sa.JSON))
    invited = {
        row.person_id
        for row in conn.execute(
            sa.select(credential.c.person_id, credential.c.created_by).where(
                credential.c.kind.in_(('signin', 'api_token')),
                credential.c.created_by.notin_(_NOT_AN_ADMIN),
                credential.c.created_by != credential.c.person_id,
            )
        )
    }
    for person_id in sorted(invited):
        roles = conn.execute(
            sa.select(person.c.roles).where(person.c.id == person_id)
        ).scalar_one_or_none()
        if roles is None:
            continue
        roles = json.loads(roles) if isinstance(roles, str) else list(roles)
        if 'member' not in roles:
            conn.execute(
                person.update().where(person.c.id == person_id).values(roles=[*roles, 'member'])
            )


def downgrade() -> None:
    # The roles given stay: they are what an admin's invite gives from now on.
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.drop_constraint('uq_inbox_sender_event', type_='unique')
        batch_op.create_unique_constraint('uq_inbox_event', ['platform', 'event_id'])
