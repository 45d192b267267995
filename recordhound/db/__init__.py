"""The product database: SQLAlchemy 2 models, engines, migrations and batched upserts."""
