"""One run of the alerts: plan a delivery for every new matching change, then send what is due."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from sqlalchemy import Engine

from recordhound.alerts.config import AlertsConfig
from recordhound.alerts.deliver import Delivered, Sender, deliver, send
from recordhound.alerts.planner import plan

logger = logging.getLogger(__name__)


def run_alerts(engine: Engine, config: AlertsConfig, sender: Sender = send) -> Delivered:
    planned = plan(engine, datetime.now(UTC))
    done = deliver(engine, config, sender)
    logger.info("Alerts: %d planned, %d sent, %d to retry, %d failed",
                planned, done.sent, done.retrying, done.failed)
    return done
