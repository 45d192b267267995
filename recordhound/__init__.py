"""recordhound: crash-safe Scrapy crawls of record-shop catalogs into a reviewed product database."""

__version__ = "0.1.0"
