// The admin's charts: every element with class "rh-chart" and data-src="URL" gets the JSON at
// that URL ({x: [unix seconds], series: [{label, values}], step, unit}) drawn with uPlot
// (static/vendor, served by the admin itself). A file, not inline: the admin's CSP allows no inline script.
(function () {
  "use strict";
  var COLORS = ["#206bc4", "#d63939", "#2fb344", "#f59f00", "#ae3ec9", "#0ca678", "#4263eb", "#f76707"];

  function say(el, text) {
    var note = document.createElement("p");
    note.className = "text-muted mb-0";
    note.textContent = text;
    el.replaceChildren(note);
  }

  function draw(el, data) {
    if (!data.x.length) { say(el, el.dataset.empty || "No data yet."); return; }
    var series = [{}].concat(data.series.map(function (s, i) {
      return {label: s.label, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false,
              paths: data.step ? uPlot.paths.stepped({align: 1}) : undefined, points: {show: true, size: 6}};
    }));
    var options = {width: Math.max(el.clientWidth, 320), height: Number(el.dataset.height || 260),
                   series: series, scales: {x: {time: true}}, axes: [{}, {label: data.unit || "", size: 70}]};
    el.replaceChildren();
    new uPlot(options, [data.x].concat(data.series.map(function (s) { return s.values; })), el);
  }

  function load(el) {
    fetch(el.dataset.src, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(function (data) { draw(el, data); })
      .catch(function (e) { say(el, "Chart unavailable: " + e.message); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".rh-chart[data-src]").forEach(load);
  });
})();
