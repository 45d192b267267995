"""The web admin: the catalog tables, the review queue and crawl status (sqladmin on Starlette)."""
