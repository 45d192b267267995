"""Alerts: rules over price, stock and crawl changes, delivered through Apprise.

``rules`` (add, list, remove), ``planner`` (which changes match which rule: one delivery row
each), ``deliver`` (send with retries and backoff, record the outcome), ``service`` (one run of
both), ``cli`` (`recordhound alerts ...`). See docs/howto/alerts-and-charts.md.
"""
