"""The crawler's side of the review queue: which names are decided, park and release items,
record rejected items, hold large price changes. Called by the catalog writer."""

from __future__ import annotations

from collections.abc import Callable

from recordhound.review.docstore import Doc, Txn
from recordhound.review.records import (
    DECIDED, ENTRIES, FAILED, INDEX, PARKED, PENDING, PRICE_CHANGE, PRICES, REJECTED, REVISION, SOURCES_KEPT, Origin,
    Parked, PriceHold, Side, Unknown, _entry, _now, index_key, revision, supersede_failed, waiting,
)
from recordhound.text import preferred_spelling


WITHDRAWN = "withdrawn: a crawl saw the offer at its stored price again"


class CrawlSide(Side):
    def decisions(self, kind: str, name_keys: list[str]) -> dict[str, Doc]:
        """Decided entries among these names: name key → entry (status, entity_id)."""
        def work(txn: Txn) -> dict[str, Doc]:
            ids = txn.get_many(INDEX, [index_key(kind, k) for k in name_keys])
            entries = txn.get_many(ENTRIES, [str(doc["id"]) for doc in ids.values()])
            found = {}
            for ikey, doc in ids.items():
                entry = entries.get(str(doc["id"]))
                if entry and entry["status"] in DECIDED:
                    found[ikey.split("|", 1)[1]] = entry
            return found
        return self.store.run(work)

    def park(self, items: list[Parked], suggest: Callable[[str, str], list[Doc]],
             expected: dict[str, Doc] | None = None) -> list[Parked]:
        """Hold items back under their pending entries (created on first sight).

        Returns the items not parked because one of their entries was decided meanwhile:
        the caller resolves them again (the decision is visible now). With ``expected`` (item
        key → the parked version the caller read), an item parked otherwise since is left alone."""
        if not items:
            return []
        new_keys = self.store.run(lambda txn: _unindexed(txn, items))
        suggestions = {key: suggest(key[0], key[2]) for key in new_keys}  # outside the transaction
        return self.store.run(lambda txn: _park(txn, items, suggestions, expected))

    def unpark(self, item_keys: list[str], expected: dict[str, Doc] | None = None) -> None:
        """Items that were stored: no entry holds them any more. With ``expected`` (item key → the
        parked version the caller read), only the items still parked as read."""
        if item_keys:
            self.store.run(lambda txn: _unpark(txn, item_keys, expected))

    def still_parked(self, expected: dict[str, Doc]) -> set[str]:
        """The item keys still parked as the caller read them (``expected``: key → parked version)."""
        def work(txn: Txn) -> set[str]:
            return {key for key, doc in txn.get_many(PARKED, list(expected)).items() if doc == expected[key]}
        return self.store.run(work) if expected else set()

    def reject(self, rejected: list[tuple[str, Doc, Origin, str]], expected: dict[str, Doc] | None = None) -> None:
        """Items that cannot enter the product DB: (item key, item, origin, reason). In the same
        transaction no entry holds them any more: an older version parked by an earlier crawl is
        not stored when its names are decided. With ``expected`` (item key → the parked version
        the caller read), only the items still parked as read."""
        def work(txn: Txn) -> None:
            current = txn.get_many(PARKED, [key for key, *_ in rejected]) if expected is not None else {}
            for key, item, origin, reason in rejected:
                if expected is None or current.get(key) == expected.get(key):
                    txn.put(REJECTED, key, {"item": item, **origin.doc(), "reason": reason, "at": _now()})
            _unpark(txn, [key for key, *_ in rejected], expected)
        if rejected:
            self.store.run(work)

    def hold_prices(self, holds: list[PriceHold]) -> int:
        """Price changes above the threshold wait for a decision; one pending entry per offer.

        Returns how many are (still) waiting. Only a pending entry follows the latest price seen;
        one with a decision (queued, failed, decided) is never changed: another change opens a new
        entry. The same whole change (old and new price and currency) as the offer's latest entry is
        not asked again when that entry is rejected, or still waits on its decision (queued, failed).
        A pending entry's ``revision`` goes up each time its change is rewritten: a decision made on the
        change a reviewer viewed carries it, and is refused once the change is another."""
        def work(txn: Txn) -> int:
            return sum(_hold(txn, hold) for hold in holds)
        return self.store.run(work) if holds else 0

    def withdraw_prices(self, offer_ids: list[int]) -> int:
        """These offers are shown at the price now stored (the old one again, or a change under the
        threshold, written): a change of theirs still pending, or expired unanswered (``review retry``
        would ask it again), is stale (approving it would write a price the shop no longer shows):
        superseded, with the reason; an expired one's job moves from failed to completed. Returns how many."""
        def work(txn: Txn) -> int:
            refs = txn.get_many(INDEX, [index_key("price", str(offer_id)) for offer_id in offer_ids])
            entries = txn.get_many(ENTRIES, [str(ref["id"]) for ref in refs.values()]) if refs else {}
            withdrawn = 0
            for entry in entries.values():
                if entry["status"] in ("pending", "expired"):
                    txn.delete(PRICES, str(entry["id"]))
                    failed = txn.get(FAILED, str(entry.get("decision"))) if entry["status"] == "expired" else None
                    if failed is not None:  # its expiry is done with: nothing left to retry
                        supersede_failed(txn, failed, reason=WITHDRAWN)
                    txn.put(ENTRIES, str(entry["id"]), {
                        **entry, "status": "superseded", "decided_at": _now(),
                        "reason": WITHDRAWN})
                    withdrawn += 1
            return withdrawn
        return self.store.run(work) if offer_ids else 0


WAITING_ON_DECISION = ("queued", "failed")  # decided, not yet applied (or its apply failed)


def _hold(txn: Txn, hold: PriceHold) -> int:
    """Hold one change (see ``hold_prices``); 1 when it is (still) waiting, else 0."""
    ikey = index_key("price", str(hold.offer_id))
    ref = txn.get(INDEX, ikey)
    entry = txn.get(ENTRIES, str(ref["id"])) if ref else None
    if entry and entry["status"] in WAITING_ON_DECISION + ("rejected",) and _same_change(entry, hold):
        return int(entry["status"] != "rejected")
    if entry is None or entry["status"] != "pending":
        entry = {"id": txn.next_id(), "kind": "price", "created_at": _now(), "attempts": 0,
                 "last_error": None, "status": "pending", "decision": None, REVISION: 1}
        txn.put(INDEX, ikey, {"id": entry["id"]})
        txn.put(PRICES, str(entry["id"]), {"kind": "price"})
    elif not _same_change(entry, hold):  # another change: what a reviewer viewed is no longer asked
        entry[REVISION] = revision(entry) + 1
    entry.update({
        "offer_id": hold.offer_id, "external_id": hold.external_id, "url": hold.url,
        "old_price": hold.old_price, "new_price": hold.new_price,
        "old_currency": hold.old_currency, "new_currency": hold.new_currency,
        "change_pct": hold.change_pct, "sources": [hold.origin.doc()],
        "name": f"offer {hold.external_id}: {_shown(hold.old_price, hold.old_currency, hold)} → "
                f"{_shown(hold.new_price, hold.new_currency, hold)}"})
    txn.put(ENTRIES, str(entry["id"]), entry)
    return 1


def _same_change(entry: Doc, hold: PriceHold) -> bool:
    return all(entry[field] == getattr(hold, field) for field in PRICE_CHANGE)


def _shown(price: str | None, currency: str | None, hold: PriceHold) -> str:
    """A price in an entry's name; with its currency when the change is one of currency."""
    return f"{price} {currency}" if hold.old_currency != hold.new_currency and currency else str(price)


def _unindexed(txn: Txn, items: list[Parked]) -> set[tuple[str, str, str]]:
    """(kind, name key, a spelling) of the names that have no entry yet."""
    wanted = {index_key(u.kind, u.name_key): u for item in items for u in item.waits}
    found = txn.get_many(INDEX, list(wanted))
    return {(u.kind, u.name_key, u.spelling) for key, u in wanted.items() if key not in found}


def _park(txn: Txn, items: list[Parked], suggestions: dict[tuple[str, str, str], list[Doc]],
          expected: dict[str, Doc] | None) -> list[Parked]:
    suggested = {(kind, key): s for (kind, key, _), s in suggestions.items()}
    # one round trip each for what the loop below reads (a Redis transaction caches its reads)
    known = txn.get_many(INDEX, list({index_key(u.kind, u.name_key) for i in items for u in i.waits}))
    txn.get_many(ENTRIES, [str(ref["id"]) for ref in known.values()])
    txn.get_many(PARKED, [item.key for item in items])
    entries: dict[str, Doc] = {}
    raced: list[Parked] = []
    for item in items:
        ids = []
        for unknown in item.waits:
            entry = _sighted(txn, entries, unknown, item.origin, suggested.get((unknown.kind, unknown.name_key)))
            if entry["status"] in DECIDED:
                break
            ids.append(entry["id"])
        else:
            old = txn.get(PARKED, item.key)
            if expected is not None and old != expected.get(item.key):
                continue  # parked, stored or rejected by a crawl since the caller read it: left as it is
            for stale in set(old["waits"] if old else ()) - set(ids):
                txn.delete(waiting(stale), item.key)
            for entry_id in ids:
                txn.put(waiting(entry_id), item.key, {})
            txn.put(PARKED, item.key, {"item": item.item, "waits": ids, **item.origin.doc(), "at": _now()})
            continue
        raced.append(item)
    for entry_id, entry in entries.items():
        txn.put(ENTRIES, entry_id, entry)
    return raced


def _sighted(txn: Txn, entries: dict[str, Doc], unknown: Unknown, origin: Origin,
             suggestions: list[Doc] | None) -> Doc:
    """The entry of a name (created on first sight), with this spelling and origin added."""
    ikey = index_key(unknown.kind, unknown.name_key)
    ref = txn.get(INDEX, ikey)
    if ref is None:
        ref = {"id": txn.next_id()}
        entry_id = ref["id"]
        txn.put(INDEX, ikey, ref)
        txn.put(PENDING, str(entry_id), {"kind": unknown.kind})
        entries[str(entry_id)] = {
            "id": entry_id, "kind": unknown.kind, "name_key": unknown.name_key, "name": unknown.spelling,
            "spellings": [], "sources": [], "created_at": _now(), "attempts": 0, "last_error": None,
            "suggestions": suggestions or [], "status": "pending", "decision": None}
    elif str(ref["id"]) not in entries:
        entries[str(ref["id"])] = _entry(txn, ref["id"])
    entry = entries[str(ref["id"])]
    if unknown.spelling not in entry["spellings"]:
        entry["spellings"].append(unknown.spelling)
        entry["name"] = preferred_spelling(entry["spellings"])
    if len(entry["sources"]) < SOURCES_KEPT and origin.doc() not in entry["sources"]:
        entry["sources"].append(origin.doc())
    return entry


def _unpark(txn: Txn, item_keys: list[str], expected: dict[str, Doc] | None = None) -> None:
    for key, doc in txn.get_many(PARKED, item_keys).items():
        if expected is not None and doc != expected.get(key):
            continue
        for entry_id in doc["waits"]:
            txn.delete(waiting(entry_id), key)
        txn.delete(PARKED, key)
