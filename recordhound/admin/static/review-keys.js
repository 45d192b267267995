// Keyboard shortcuts of the Pending review list (a file, not inline: the admin's CSP allows no inline script).
//   j / k   next / previous name          x   tick or untick its checkbox
//   a       approve                       m   merge into its top suggestion (none: the "Merge with…" search)
//   s       skip                          e   edit the name, then approve
// Decisions post the row's own forms (with their CSRF token); after the page comes back the
// cursor stays at the same place in the list, which is now the next undecided name.
(function () {
  "use strict";
  const KEY = "recordhound-review-row";

  function rows() { return Array.from(document.querySelectorAll("table#pending tr[data-entry]")); }

  function current() { return document.querySelector("table#pending tr.current"); }

  function select(index) {
    const all = rows();
    if (!all.length) return;
    const at = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row, i) {
      row.classList.toggle("current", i === at);
      row.classList.toggle("table-active", i === at);
      row.setAttribute("aria-selected", i === at ? "true" : "false");
    });
    all[at].scrollIntoView({block: "nearest"});
    sessionStorage.setItem(KEY, String(at));
  }

  function press(row, selector) {
    const target = row.querySelector(selector);
    if (!target) return false;
    target.click();
    return true;
  }

  const actions = {
    j: function () { select(rows().indexOf(current()) + 1); },
    k: function () { select(rows().indexOf(current()) - 1); },
    x: function (row) { press(row, "input.pending-entry"); },
    a: function (row) { press(row, "button.approve"); },
    s: function (row) { press(row, "button.skip"); },
    m: function (row) { press(row, "button.merge-suggestion") || press(row, "a.merge-search"); },
    e: function (row) { press(row, "a.edit"); },
  };

  document.addEventListener("keydown", function (event) {
    const field = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (field && field.closest && field.closest("input, select, textarea, [contenteditable]")) return;
    const action = actions[event.key];
    const row = current();
    if (!action || (!row && event.key !== "j" && event.key !== "k")) return;
    event.preventDefault();
    action(row);
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (!rows().length) return;
    select(Number(sessionStorage.getItem(KEY) || "0"));
  });
})();
