"""The persistent frontier: a Scrapy scheduler over a lease/ack queue and a seen-set.

Backends (one contract, ``backend.FrontierBackend``): embedded SQLite (default) and Redis
(``REDIS_URL``). See ``scheduler.py`` for how leases, acks and failures flow.
"""
