"""offer_names: an offer without an id of its own is named without its place on the page

Offers the shop gives no id were stored as ``PAGE#FORMAT/CONDITION/N``, N their position among the
page's offers, so a page that reordered its offers or added one above renamed them (new offers,
history left behind). They are named now as ``recordhound.offer_names.offer_ids`` names them (page,
format, condition, grades; ``~2``, ``~3`` only among equal ones, in their old order), so the next
crawl of the page finds the same rows.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 16:50:00
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from alembic import op

from recordhound.items import Offer
from recordhound.offer_names import POSITIONAL_ID, offer_ids

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

POSITIONAL = POSITIONAL_ID  # the old PAGE#FORMAT/CONDITION/N
OFFERS = sa.table("offers", *(sa.column(name) for name in (
    "id", "source_id", "external_id", "format", "condition", "media_grade", "sleeve_grade")))


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.select(OFFERS).where(OFFERS.c.external_id.like("%#%/%/%"))).all()
    pages: defaultdict[tuple[int, str], list[tuple[int, Any]]] = defaultdict(list)
    for row in rows:
        if (old := POSITIONAL.match(row.external_id)) is not None:
            pages[(row.source_id, old["page"])].append((int(old["n"]), row))
    taken = {(r.source_id, r.external_id) for r in conn.execute(sa.select(OFFERS.c.source_id, OFFERS.c.external_id))}
    for (source_id, page), found in pages.items():
        found.sort(key=lambda pair: pair[0])
        names = offer_ids(page, [Offer("", "", r.format, r.condition, r.media_grade, r.sleeve_grade) for _, r in found])
        for (_, row), name in zip(found, names):
            if (source_id, name) not in taken:  # never onto a row that exists
                conn.execute(sa.update(OFFERS).where(OFFERS.c.id == row.id).values(external_id=name))


def downgrade() -> None:
    """The old positions are not kept: the names stay (a later crawl by older code adds new offers)."""
