"""recordhound's own Scrapy signals (sent with ``crawler.signals.send_catch_log``)."""

# Something a site served or a user wrote could not be used. Arguments:
# kind (short slug, e.g. "http_404", "field_price", "rejected"), url, message.
error_recorded = object()

# A page's outcome waits on its items now (the frontier tries a suspect alone, suspects.py): item
# stores write what they hold at once, not at their batch time, until told otherwise. Argument:
# eager (bool).
store_eagerly = object()

# The product store is opening (its writer starting, the crawl's source being opened): a page's items
# cannot be stored before it has opened (``store_opened``). The frontier tries no suspect meanwhile, so
# that a node's start-up is not counted as the page's try (suspects.py). No arguments.
store_opening = object()
store_opened = object()
