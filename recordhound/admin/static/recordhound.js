// Select-all checkboxes of the review lists: a header checkbox with data-select="CLASS" ticks
// every checkbox of that class on the page. (A file, not inline: the admin's CSP allows no inline script.)
document.addEventListener("change", function (event) {
  const box = event.target;
  if (!box.matches || !box.matches("input.select-all")) return;
  document.querySelectorAll("input." + box.dataset.select).forEach(function (each) { each.checked = box.checked; });
});
