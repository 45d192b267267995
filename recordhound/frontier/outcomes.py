"""What became of each request this node handed to the engine.

A request is done when its callback's output is exhausted and every item it yielded has
settled (scraped, dropped, or errored); it has failed when its errback ran or its callback
raised; it is replaced when a downloader middleware (retry, redirect) queued a new request
for it. The scheduler writes acks and failures only after the new requests are queued.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _State:
    downloading: bool = True
    pending_items: int = 0
    output_done: bool = False
    error: str | None = None


class Outcomes:
    def __init__(self, on_done: Callable[[int], None], on_failed: Callable[[int, str], None]) -> None:
        self._states: dict[int, _State] = {}
        self._on_done, self._on_failed = on_done, on_failed

    def __len__(self) -> int:
        return len(self._states)

    def ids(self) -> list[int]:
        return list(self._states)

    def handed_out(self, frontier_id: int) -> None:
        self._states[frontier_id] = _State()

    def is_downloading(self, frontier_id: int) -> bool:
        state = self._states.get(frontier_id)
        return state is not None and state.downloading

    def response_received(self, frontier_id: int) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.downloading = False

    def replaced(self, frontier_id: int) -> None:
        if self._states.pop(frontier_id, None) is not None:
            self._on_done(frontier_id)

    def item_yielded(self, frontier_id: int) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.pending_items += 1

    def item_settled(self, frontier_id: int, error: str | None = None) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.pending_items -= 1
            state.error = state.error or error
            self._maybe_finish(frontier_id, state)

    def output_finished(self, frontier_id: int) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.downloading = False
            state.output_done = True
            self._maybe_finish(frontier_id, state)

    def failed(self, frontier_id: int, reason: str) -> None:
        if self._states.pop(frontier_id, None) is not None:
            self._on_failed(frontier_id, reason)

    def _maybe_finish(self, frontier_id: int, state: _State) -> None:
        if state.output_done and state.pending_items <= 0:
            del self._states[frontier_id]
            if state.error:
                self._on_failed(frontier_id, state.error)
            else:
                self._on_done(frontier_id)

    def forget(self) -> list[int]:
        """Drop every unfinished request (returned to the queue by the caller)."""
        ids = list(self._states)
        self._states.clear()
        return ids
