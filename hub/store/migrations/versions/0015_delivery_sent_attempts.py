"""delivery.attempts of a sent delivery counts the try that sent it

Until now `attempts` counted failed tries only, so a delivery sent at once showed 0 and one
sent after two failures 2 (issue 47). The outbox now counts the try that sent it too; the
deliveries sent before the upgrade get that try added, so old and new read alike. Pending,
failed and cancelled ones are as they were: no try of theirs sent anything.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07 06:40:00
"""

from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE delivery SET attempts = attempts + 1 WHERE status = 'sent'")


def downgrade() -> None:
    op.execute("UPDATE delivery SET attempts = attempts - 1 WHERE status = 'sent' AND attempts > 0")
