"""What became of each request this node handed to the engine.

A request is done when its callback's output is exhausted, every request it yielded has
reached the scheduler (``child_enqueued``: it is then in the buffer written before any later
ack), and every item it yielded has settled (scraped, dropped, or errored). Scrapy reads a
callback's output ahead of the engine, so "output exhausted" alone says nothing about the
children: counting them is what makes ack-after-children hold by construction. A request has
failed when its errback ran or its callback raised (after its children are in, too); it is
replaced when a downloader middleware (retry, redirect) queued a new request for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _State:
    downloading: bool = True
    pending_items: int = 0
    pending_children: int = 0
    output_done: bool = False
    error: str | None = None


class Outcomes:
    def __init__(self, on_done: Callable[[int], None], on_failed: Callable[[int, str, float | None], None]) -> None:
        self._states: dict[int, _State] = {}
        self._on_done, self._on_failed = on_done, on_failed
        self._watched: int | None = None  # the request tried alone (suspects.py): told when its outcome is known
        self._on_watched: Callable[[], None] | None = None

    def watch(self, frontier_id: int | None, on_end: Callable[[], None] | None) -> None:
        """Call ``on_end`` once the outcome of ``frontier_id`` is known (done: its output exhausted, its
        children in and its items settled; or it failed or was replaced); None: stop watching."""
        self._watched, self._on_watched = frontier_id, on_end

    def _processed(self, frontier_id: int) -> None:
        if frontier_id == self._watched and self._on_watched is not None:
            self._on_watched()

    def __len__(self) -> int:
        return len(self._states)

    def ids(self) -> list[int]:
        return list(self._states)

    def handed_out(self, frontier_id: int) -> None:
        self._states[frontier_id] = _State()

    def __contains__(self, frontier_id: int) -> bool:
        return frontier_id in self._states

    def is_downloading(self, frontier_id: int) -> bool:
        state = self._states.get(frontier_id)
        return state is not None and state.downloading

    def handing(self, frontier_id: int) -> object | None:
        """The current hand-out of ``frontier_id`` (compare by identity: the same id handed out again,
        after the store took its lease back, is another), None when it has none."""
        return self._states.get(frontier_id)

    def response_received(self, frontier_id: int) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.downloading = False

    def replaced(self, frontier_id: int) -> None:
        if self._states.pop(frontier_id, None) is not None:
            self._on_done(frontier_id)
            self._processed(frontier_id)

    def item_yielded(self, frontier_id: int) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.pending_items += 1

    def child_yielded(self, frontier_id: int) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.pending_children += 1

    def child_enqueued(self, frontier_id: int) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.pending_children -= 1
            self._maybe_finish(frontier_id, state)

    def item_settled(self, frontier_id: int, error: str | None = None) -> None:
        if (state := self._states.get(frontier_id)) is not None:
            state.pending_items -= 1
            state.error = state.error or error
            self._maybe_finish(frontier_id, state)

    def output_finished(self, frontier_id: int, error: str | None = None) -> None:
        """The callback's output is exhausted (``error``: it raised after what it yielded)."""
        if (state := self._states.get(frontier_id)) is not None:
            state.downloading = False
            state.output_done = True
            state.error = state.error or error
            self._maybe_finish(frontier_id, state)

    def failed(self, frontier_id: int, reason: str, retry_in: float | None = None) -> None:
        """``retry_in``: a transient failure, tried again that many seconds from now."""
        if self._states.pop(frontier_id, None) is not None:
            self._on_failed(frontier_id, reason, retry_in)
            self._processed(frontier_id)

    def _maybe_finish(self, frontier_id: int, state: _State) -> None:
        if state.output_done and state.pending_items <= 0 and state.pending_children <= 0:
            del self._states[frontier_id]
            if state.error:
                self._on_failed(frontier_id, state.error, None)
            else:
                self._on_done(frontier_id)
            self._processed(frontier_id)

    def forget(self) -> list[int]:
        """Drop every unfinished request (returned to the queue by the caller)."""
        ids = list(self._states)
        self._states.clear()
        return ids
