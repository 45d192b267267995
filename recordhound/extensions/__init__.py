"""Scrapy extensions of recordhound."""
