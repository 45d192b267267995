"""Spiders: ``catalog`` crawls any shop described by a source profile."""
