"""stock_changes, crawl_samples, alert_rules, alert_deliveries: alerts and the admin's charts

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 16:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "stock_changes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("offer_id", sa.Integer(), sa.ForeignKey("offers.id"), nullable=False, index=True),
        sa.Column("old_availability", sa.String(length=20)),
        sa.Column("new_availability", sa.String(length=20)),
        sa.Column("changed_at", WHEN, nullable=False),
    )
    op.create_table(
        "crawl_samples",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("sources.id"), nullable=False, index=True),
        sa.Column("at", WHEN, nullable=False),
        sa.Column("pages", sa.Integer(), nullable=False),
        sa.Column("items", sa.Integer(), nullable=False),
        sa.Column("stored", sa.Integer(), nullable=False),
        sa.Column("finished", sa.Boolean(), nullable=False),
        sa.Column("health_error", sa.Text()),
    )
    op.create_table(
        "alert_rules",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("sources.id")),
        sa.Column("release_id", sa.Integer(), sa.ForeignKey("releases.id")),
        sa.Column("offer_id", sa.Integer(), sa.ForeignKey("offers.id")),
        sa.Column("threshold", sa.Numeric(12, 2)),
        sa.Column("currency", sa.String(length=3)),
        sa.Column("notify", sa.Text(), nullable=False),
        sa.Column("after_id", sa.Integer(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("removed_at", WHEN),
    )
    op.create_table(
        "alert_deliveries",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("rule_id", sa.Integer(), sa.ForeignKey("alert_rules.id"), nullable=False, index=True),
        sa.Column("event_kind", sa.String(length=20), nullable=False),
        sa.Column("event_id", sa.Integer(), nullable=False),
        sa.Column("dedupe_key", sa.String(length=100), nullable=False, unique=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False, index=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", WHEN, nullable=False),
        sa.Column("last_error", sa.Text()),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("sent_at", WHEN),
        sa.UniqueConstraint("rule_id", "event_kind", "event_id"),
    )


def downgrade() -> None:
    for table in ("alert_deliveries", "alert_rules", "crawl_samples", "stock_changes"):
        op.drop_table(table)
