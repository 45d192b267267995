"""Downloader and spider middlewares of recordhound."""
