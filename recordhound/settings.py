"""Every setting of the recordhound Scrapy project, its default and its unit.

Scrapy's own settings keep Scrapy's names; recordhound's carry the ``RECORDHOUND_`` prefix.
Components parse their part once into a frozen dataclass (see ``recordhound.config``),
so a bad value fails at start-up with the setting's name.
"""

from scrapy.settings import default_settings as _scrapy

from recordhound.extensions import unused

BOT_NAME = "recordhound"
SPIDER_MODULES = ["recordhound.spiders"]
COMMANDS_MODULE = "recordhound.commands"  # `scrapy shell` with profile_check()
NEWSPIDER_MODULE = "recordhound.spiders"

# --- Scrapy behaviour -------------------------------------------------------------
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
ROBOTSTXT_OBEY = True  # Protego; a profile may say robots: {obey: false, reason: ...} (logged)
CONCURRENT_REQUESTS = 32
CONCURRENT_REQUESTS_PER_DOMAIN = 32
# Scrapy starts this many asyncio tasks per response to process its output; product pages
# yield one item and listings a few dozen requests, so 100 (the default) is mostly overhead.
CONCURRENT_ITEMS = 8
DOWNLOAD_TIMEOUT = 30  # seconds
# Scrapy's RetryMiddleware retries at once and in memory; recordhound's retries live in the
# frontier (RECORDHOUND_RETRY_* below), which also reads Scrapy's RETRY_EXCEPTIONS.
RETRY_ENABLED = False
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False  # no open debug port on crawler nodes
REMOTE_CONTROL_ENABLED = False  # no open control port on crawler nodes
LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
USER_AGENT = "recordhound/0.1 (+catalog crawler)"

# Scrapy's base list with a stand-in for its cookies middleware, imported only when COOKIES_ENABLED
# is on (extensions/unused.py says why); name Scrapy's own in DOWNLOADER_MIDDLEWARES to turn it off or move it.
DOWNLOADER_MIDDLEWARES_BASE = unused.swapped(_scrapy.DOWNLOADER_MIDDLEWARES_BASE, unused.Cookies)
# Scrapy's base list with a stand-in for its remote-control extension, imported only when
# REMOTE_CONTROL_ENABLED is on; name Scrapy's own in EXTENSIONS to turn it off or move it.
EXTENSIONS_BASE = unused.swapped(_scrapy.EXTENSIONS_BASE, unused.RemoteControl)

SCHEDULER = "recordhound.frontier.scheduler.FrontierScheduler"
DUPEFILTER_CLASS = "recordhound.frontier.dupefilter.FrontierDupeFilter"
SPIDER_MIDDLEWARES = {
    # closest to the engine: sees every callback's final output, acks when it is all stored
    "recordhound.frontier.middleware.FrontierMiddleware": 10,
}
DOWNLOADER_MIDDLEWARES = {
    # Scrapy's robots.txt middleware, taking the copy the frontier read for its Crawl-delay (one fetch a host)
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "recordhound.middlewares.robots.ReadOnceRobotsTxtMiddleware": 100,
    # next to the downloader: retries and redirects work on replayed responses as on live ones
    "recordhound.middlewares.cassette.CassetteMiddleware": 950,
    # profiles' `render:` specs → scrapy-playwright meta (before the cassette: replays stay offline)
    "recordhound.middlewares.render.RenderMiddleware": 900,
}
ITEM_PIPELINES = {
    "recordhound.pipelines.normalize.NormalizePipeline": 100,
    "recordhound.pipelines.store.StorePipeline": 500,
}
# Scrapy's in-memory stats without its per-access deprecation shim (extensions/lean.py)
STATS_CLASS = "recordhound.extensions.lean.LeanStats"
EXTENSIONS = {
    # no DEBUG record per page or item when no log handler would take it (extensions/lean.py)
    "recordhound.extensions.lean.UnheardDebugRecords": 100,
    "recordhound.extensions.backends.BackendsBanner": 400,  # says which frontier, store, review queue
    "recordhound.extensions.whole_close.WholeClose": 420,  # a stop during a close waits for it to end
    "recordhound.extensions.progress.CrawlProgress": 450,  # off unless RECORDHOUND_PROGRESS_SECONDS
    "recordhound.extensions.summary.CrawlSummary": 500,
    "spidermon.contrib.scrapy.extensions.Spidermon": 510,
}
# Spidermon runs recordhound's crawl health checks when the spider closes (extensions/health.py)
SPIDERMON_ENABLED = True
SPIDERMON_SPIDER_CLOSE_MONITORS = ["recordhound.extensions.health.CrawlHealth"]

# --- Sources ----------------------------------------------------------------------
# Folders searched for SOURCE.yaml before the bundled profiles (relative to the cwd).
RECORDHOUND_PROFILES_DIRS = ["profiles"]

# --- Frontier (scheduler + dupefilter) -----------------------------------------------
# Redis shared by every node of a crawl; empty means $REDIS_URL, and without it the
# embedded frontier (one SQLite file per crawl) is used.
RECORDHOUND_REDIS_URL = ""
# Prefix of every Redis key of recordhound (keys are PREFIX:CRAWL:...).
RECORDHOUND_REDIS_PREFIX = "recordhound"
# Folder of the embedded frontier files when no JOBDIR is given (JOBDIR/frontier.sqlite3 otherwise).
RECORDHOUND_FRONTIER_DIR = ".recordhound/frontier"
# Name of the crawl the nodes share; empty means the source name.
RECORDHOUND_CRAWL_ID = ""
# This node's id; empty means "<hostname>-<n>", the lowest slot no live process holds.
RECORDHOUND_NODE_ID = ""
# A lease not renewed for this long returns to the queue: the visibility timeout (seconds).
RECORDHOUND_FRONTIER_LEASE_SECONDS = 60.0
# Requests leased per round trip; a paused crawl returns those it has not started (count).
RECORDHOUND_FRONTIER_LEASE_BATCH = 16
# New requests, acks and failures are written at least this often (seconds).
RECORDHOUND_FRONTIER_FLUSH_SECONDS = 0.2
# ...or as soon as this many new requests wait (count).
RECORDHOUND_FRONTIER_PUSH_BATCH = 200
# A request leased this many times without an outcome is recorded as failed (count): a node that dies
# makes every page it held a suspect (1); a suspect counts again only if it died while tried alone.
RECORDHOUND_FRONTIER_MAX_ATTEMPTS = 5
# Fingerprints this process remembers as seen, to drop duplicates without a round trip (count;
# 8 bytes each plus dict overhead, about 10 MB per 100,000).
RECORDHOUND_FRONTIER_SEEN_CACHE = 100_000
# Longest wait between retries while Redis or the database is unreachable (seconds).
RECORDHOUND_FRONTIER_RETRY_MAX_SECONDS = 30.0
# A starting node that loses the store while it joins the crawl waits this long for it (from its first
# failed try), then closes with `frontier_unreachable` and exits 75, EX_TEMPFAIL (seconds; SIGINT/SIGTERM
# ends the wait).
RECORDHOUND_FRONTIER_JOIN_WAIT_SECONDS = 120.0
# longest wait of one frontier call on the reactor thread (seconds): SQLite's lock wait, Redis's socket
# timeout; a call that takes longer counts as an outage (the crawl pauses and retries on its tick)
RECORDHOUND_FRONTIER_CALL_TIMEOUT_SECONDS = 1.0

# --- Recrawl schedules (a profile's `recrawl:`) -----------------------------------------------
# Keep the node running after the frontier drains, leasing pages as they come due (bool; or
# `scrapy crawl catalog -a source=S -a follow=true`).
RECORDHOUND_FOLLOW = False
# A following node logs what it re-checked and what comes due this often (seconds).
RECORDHOUND_FOLLOW_PROGRESS_SECONDS = 60.0
# 304 Not Modified reaches the spider (a recheck's conditional request: the page is unchanged).
HTTPERROR_ALLOWED_CODES = [304]

# --- Retries and politeness ------------------------------------------------------------
# A transient failure (these HTTP codes, Scrapy's RETRY_EXCEPTIONS) goes back to the frontier and
# waits base * 2**(n-1) seconds after its n-th failure (half of it jittered), at most the cap and
# at least the server's Retry-After; after the last attempt it is a dead letter (`frontier failed`).
# A profile's `retry:` overrides them (its http_codes are added to these).
RECORDHOUND_RETRY_BASE_SECONDS = 1.0  # the wait after the first failure (seconds); doubles with each failure
RECORDHOUND_RETRY_CAP_SECONDS = 60.0  # the longest wait between two attempts (seconds)
RECORDHOUND_RETRY_MAX_ATTEMPTS = 5  # attempts in all, the first included (count)
RECORDHOUND_RETRY_HTTP_CODES = [408, 429, 500, 502, 503, 504, 522, 524]  # HTTP codes that are transient failures
# Per host, every node of the crawl together (in Redis; in this process when embedded): requests
# started per second and requests in flight; 0 means no limit. A profile's `politeness:` overrides.
RECORDHOUND_POLITENESS_REQUESTS_PER_SECOND = 0.0  # requests started per second and host (0: no limit)
RECORDHOUND_POLITENESS_CONCURRENCY = 0  # requests in flight per host (count; 0: no limit)
# Lower a host's rate when it answers 429/503 or slows down, raise it slowly when it recovers (bool).
# With no rate configured, a host that answers 429 gets a learned rate (from the rate it was sent at; a 503
# alone teaches nothing), whose ceiling grows again slowly while no 429 comes.
RECORDHOUND_POLITENESS_ADAPTIVE = True

# --- Crawl health (Spidermon) ---------------------------------------------------------------
# A finished crawl is "failed" (source status, exit code 1) when it fetched no page, stored or
# parked no item from its product pages, or when more than this share of its requests failed
# (0-1; a profile's `health: {max_failed_share: ...}` overrides).
RECORDHOUND_HEALTH_MAX_FAILED_SHARE = 0.25

# --- Product database -------------------------------------------------------------
# SQLAlchemy URL of the product database; empty means $DATABASE_URL, then a SQLite file.
RECORDHOUND_DATABASE_URL = ""
# SQLite file used when neither RECORDHOUND_DATABASE_URL nor $DATABASE_URL is set.
RECORDHOUND_SQLITE_PATH = "recordhound.sqlite3"
# Run `recordhound db upgrade` automatically when a crawl opens (bool).
RECORDHOUND_DB_AUTO_UPGRADE = True
# Store items in the product database (bool); False discards them (benchmarks, dry runs).
RECORDHOUND_STORE_ENABLED = True
# Items written per transaction (count).
RECORDHOUND_STORE_BATCH_SIZE = 200
# PostgreSQL: after each batch, ANALYZE the product tables changed by 50 rows + a tenth of their size since
# their last analyze (autovacuum's rule), or by this many rows if fewer; 0: leave it to autovacuum (rows).
RECORDHOUND_STORE_ANALYZE_ROWS = 100_000
# A partial batch is written after waiting this long (seconds), or at once when nothing is downloading
# and no request waits to start (no page's items would join it soon: the last pages, a retry's wait).
RECORDHOUND_STORE_FLUSH_SECONDS = 0.5
# Back-pressure: the crawl pauses while this many items wait for the product DB (collected or being
# written; pages still downloading or being parsed count too) and resumes when half of them are stored,
# so memory stays flat when the store is slower than the crawl (count; ~50 KB of crawler RSS each).
RECORDHOUND_STORE_MAX_WAITING_ITEMS = 1000
# Where the product-database writer runs: "process" (a child process, off the crawler's GIL;
# see bench/crawl_store.py) or "thread" (a thread of the crawler process).
RECORDHOUND_STORE_WRITER = "process"
# The writer sleeps this long per item of each batch before writing it: a deliberately slow store
# for tests and benchmarks of back-pressure (seconds per item; 0: off, as in production).
RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS = 0.0
# An offer's last_seen is refreshed at most this often, so re-crawls don't rewrite rows (seconds).
RECORDHOUND_LAST_SEEN_RESOLUTION_SECONDS = 3600
# Most recent errors kept in a source's metadata (count).
RECORDHOUND_SOURCE_ERRORS_KEPT = 100

# --- Review queue ------------------------------------------------------------------
# The queue lives in Redis when RECORDHOUND_REDIS_URL / $REDIS_URL is set (keys PREFIX:tasks:*),
# else in this SQLite file (never the product database).
RECORDHOUND_REVIEW_PATH = ".recordhound/review.sqlite3"
# Create unknown artists/labels/styles directly (recorded as auto-approved) instead of parking
# their items for review: for a first import into an empty catalog (bool). A profile can say
# `trusted: true` for the same effect on one source.
RECORDHOUND_TRUST_NEW_ENTITIES = False
# A price that moves by more than this (percent of the old price) waits for a review.
RECORDHOUND_PRICE_REVIEW_THRESHOLD = 5.0
# Pending entries older than this move to the failed queue with the reason (seconds; 0: never).
RECORDHOUND_REVIEW_TTL_SECONDS = 0
# An apply worker's job not acked for this long goes back to the approved queue (seconds).
RECORDHOUND_APPLY_LEASE_SECONDS = 60.0
# `recordhound apply --follow` looks for new decisions this often (seconds).
RECORDHOUND_APPLY_POLL_SECONDS = 1.0
# Decisions recorded (one queue transaction) and applied (one product-DB transaction) together
# by `recordhound review approve|skip|merge` over many entries, the admin and the apply worker (count).
RECORDHOUND_REVIEW_BATCH_SIZE = 500
# Wait this long between a job's product-DB writes and its ack (seconds; for crash tests only).
RECORDHOUND_APPLY_ACK_DELAY_SECONDS = 0

# --- JavaScript pages (scrapy-playwright) ------------------------------------------------
# The Chromium that renders the link kinds a profile lists under `render:` (Debian: `chromium`).
RECORDHOUND_CHROMIUM_PATH = "/usr/bin/chromium"
# Browser pages open at once (count); more rendered requests wait. Pages are closed after use.
RECORDHOUND_RENDER_MAX_PAGES = 4

# --- Web admin (`recordhound admin`) --------------------------------------------------
# Key that signs the admin's session cookies; empty: one is generated once into the file below.
RECORDHOUND_ADMIN_SECRET_KEY = ""
RECORDHOUND_ADMIN_SECRET_PATH = ".recordhound/admin-secret"  # where the generated key is kept
# Send the session cookie over HTTPS only (bool): turn on behind a TLS proxy.
RECORDHOUND_ADMIN_HTTPS_ONLY = False
RECORDHOUND_ADMIN_ALLOWED_HOSTS = ["127.0.0.1", "localhost", "::1"]  # Host headers the admin answers; "*": any
RECORDHOUND_ADMIN_APPLY = True  # the admin runs the apply worker: decisions reach the catalog in seconds

# --- Jobs and the worker (`recordhound worker`, `recordhound job ...`) ---------------------
# How often an idle worker looks for a job to run, and a running one for stop requests (seconds).
RECORDHOUND_WORKER_POLL_SECONDS = 1.0
# A running job whose worker has not written a heartbeat for this long is taken over (seconds);
# a worker on the same host whose process is gone is taken over at once.
RECORDHOUND_WORKER_LEASE_SECONDS = 30.0
# A worker that is stopped (SIGTERM) stops its crawl the same way and waits this long for it to
# return its leases; a crawl still running then is killed (its leases expire and return).
RECORDHOUND_WORKER_STOP_SECONDS = 120.0
# A crawl that cannot reach Redis or the product DB at its start (exit 75) is started again with
# backoff for this long, then its job fails with the crawl's error line (seconds; 0: fail at once).
RECORDHOUND_WORKER_UNAVAILABLE_SECONDS = 600.0
RECORDHOUND_JOB_IMPORT_BATCH = 500  # rows per committed batch (and per progress update) of an import job
# A [deploy:NAME] of scrapy.cfg: crawl jobs are scheduled on that scrapyd (empty: a local crawl process).
RECORDHOUND_JOB_SCRAPYD_TARGET = ""
RECORDHOUND_UPLOADS_DIR = ".recordhound/uploads"  # files uploaded in the admin for import jobs
RECORDHOUND_DRAFTS_DIR = ".recordhound/drafts"  # profiles the admin drafts for a shop URL, with their previews

# --- Alerts (`recordhound alerts send`) -------------------------------------------
# Attempts per alert before it is recorded as failed (count).
RECORDHOUND_ALERTS_MAX_ATTEMPTS = 8
# Wait before the second attempt; doubled for each later one (seconds).
RECORDHOUND_ALERTS_RETRY_BASE_SECONDS = 2.0
# The longest wait between two attempts (seconds).
RECORDHOUND_ALERTS_RETRY_CAP_SECONDS = 3600.0
# `alerts send` waits for a retry due within this long before it exits (seconds; later ones: next run).
RECORDHOUND_ALERTS_WAIT_SECONDS = 60.0
# An alert left "sending" this long (its sender died) is sent again, with the same dedupe key (seconds).
RECORDHOUND_ALERTS_CLAIM_SECONDS = 300.0
# Timeout of one delivery's connection and read (seconds).
RECORDHOUND_ALERTS_TIMEOUT_SECONDS = 10.0

# --- Cassettes (offline spider tests) ---------------------------------------------
# A betamax-format cassette of the crawl's responses (empty: off).
RECORDHOUND_CASSETTE = ""
# "replay" serves responses from the cassette without network; "record" writes them to it.
RECORDHOUND_CASSETTE_MODE = "replay"

# --- Reporting --------------------------------------------------------------------
# Print the end-of-crawl summary to stdout (bool).
RECORDHOUND_SUMMARY_ENABLED = True
# Also write the crawl's stats and summary as JSON to this path (empty: don't).
RECORDHOUND_STATS_FILE = ""
# Redraw a progress line (pages, pages/s, items) on stderr this often while crawling (seconds;
# 0: off; at least 5 s when stderr is not a terminal). `recordhound demo` turns it on.
RECORDHOUND_PROGRESS_SECONDS = 0.0
