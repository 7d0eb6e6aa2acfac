// Draws the Pictures page with Chart.js (loaded before this file) from the figures the page carries in its JSON data
// block (#stats-data, not executed). No inline script: the page's Content-Security-Policy allows scripts from the
// console only. Each chart has a table of the same figures beside it.
/* global document, window */
(function () {
  "use strict";
  var root = document.getElementById("charts");
  if (!root || typeof window.Chart !== "function") return;
  var colours = { allowed: "#116329", denied: "#a40e26", blocked: "#7d4e00", failed: "#57606a" };
  function bar(id, labels, datasets, stacked) {
    var el = document.getElementById(id);
    if (!el) return;
    new window.Chart(el, {
      type: "bar",
      data: { labels: labels, datasets: datasets },
      options: { animation: false, responsive: true, maintainAspectRatio: false, scales: { x: { stacked: !!stacked }, y: { stacked: !!stacked, beginAtZero: true, ticks: { precision: 0 } } } },
    });
  }
  var data = document.getElementById("stats-data");
  Promise.resolve()
    .then(function () { return JSON.parse(data ? data.textContent : "null"); })
    .then(function (s) {
      bar("chart-hour", s.perHour.map(function (h) { return h.hour; }), ["allowed", "denied", "blocked", "failed"].map(function (o) {
        return { label: o, data: s.perHour.map(function (h) { return h[o]; }), backgroundColor: colours[o] };
      }), true);
      bar("chart-reason", s.refusalsByReason.map(function (x) { return x.reason; }), [{ label: "refusals", data: s.refusalsByReason.map(function (x) { return x.count; }), backgroundColor: colours.denied }]);
      bar("chart-guard", s.guardrailBlocks.map(function (x) { return x.guardrail; }), [{ label: "blocks", data: s.guardrailBlocks.map(function (x) { return x.count; }), backgroundColor: colours.blocked }]);
      bar("chart-actors", s.topActors.map(function (x) { return x.actor; }), [{ label: "records", data: s.topActors.map(function (x) { return x.count; }), backgroundColor: "#0550ae" }]);
      root.setAttribute("data-drawn", "true");
    })
    .catch(function () { root.setAttribute("data-drawn", "failed"); });
})();
