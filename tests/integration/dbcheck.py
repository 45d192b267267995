"""Read the product database the way a reviewer would: counts, max IDs, sequences, rows."""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, text

TABLES = ("sources", "artists", "labels", "styles", "artist_synonyms", "label_synonyms",
          "style_synonyms", "releases", "release_artists", "release_styles", "offers", "offer_history")
ID_TABLES = tuple(t for t in TABLES if t not in ("release_artists", "release_styles"))


class ProductDb:
    def __init__(self, url: str) -> None:
        self.engine = create_engine(url)

    def rows(self, sql: str, **params: Any) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(text(sql), params).all())

    def scalar(self, sql: str, **params: Any) -> Any:
        with self.engine.connect() as conn:
            return conn.execute(text(sql), params).scalar()

    def counts(self) -> dict[str, int]:
        return {t: self.scalar(f"SELECT count(*) FROM {t}") for t in TABLES}

    def max_ids(self) -> dict[str, int | None]:
        return {t: self.scalar(f"SELECT max(id) FROM {t}") for t in ID_TABLES}

    def sequences(self) -> dict[str, int | None]:
        """PostgreSQL's sequence positions of the product tables (burnt values show here even when
        rows don't); a crawl adds to crawl_samples by design, so a re-crawl moves its sequence."""
        if self.engine.dialect.name != "postgresql":
            return {}
        product = {f"{table}_id_seq" for table in ID_TABLES}  # not the logs (crawl_samples, alert_deliveries)
        return {name: value for name, value in self.rows("SELECT sequencename, last_value FROM pg_sequences")
                if name in product}

    def snapshot(self) -> dict[str, Any]:
        return {"counts": self.counts(), "max_ids": self.max_ids(), "sequences": self.sequences()}

    def offers(self) -> dict[str, dict[str, Any]]:
        rows = self.rows("SELECT external_id, price, currency, in_stock, release_id FROM offers")
        return {r.external_id: {"price": None if r.price is None else f"{r.price:.2f}",
                                "currency": r.currency, "in_stock": r.in_stock, "release_id": r.release_id}
                for r in rows}

    def source_meta(self, name: str = "demo") -> dict[str, Any]:
        import json

        value = self.scalar("SELECT metadata FROM sources WHERE name = :n", n=name)
        return value if isinstance(value, dict) else json.loads(value)

    def close(self) -> None:
        self.engine.dispose()
