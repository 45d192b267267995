"""The review queue: what the crawler could not match waits here for a human decision."""
