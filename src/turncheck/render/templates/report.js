"use strict";
// Filters and tabs of the turncheck HTML report. Reads only data-* attributes and
// writes only `hidden`, `aria-pressed` and text: report content never becomes markup.
(function () {
  function applyFilters(section) {
    var form = section.querySelector("[data-filters]");
    var wanted = {};
    form.querySelectorAll("[data-filter]").forEach(function (control) {
      wanted[control.getAttribute("data-filter")] = control.value.trim().toLowerCase();
    });
    var rows = section.querySelectorAll("details.row");
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var ok = (!wanted.verdict || row.dataset.verdict === wanted.verdict) &&
        (!wanted.suite || row.dataset.suite.toLowerCase() === wanted.suite) &&
        (!wanted.status || row.dataset.status === wanted.status) &&
        (!wanted.text || row.dataset.text.indexOf(wanted.text) !== -1);
      row.hidden = !ok;
      if (ok) { shown++; }
    }
    section.querySelector("[data-shown]").textContent = shown + " of " + rows.length + " shown";
  }

  document.querySelectorAll("[data-section]").forEach(function (section) {
    var form = section.querySelector("[data-filters]");
    form.addEventListener("input", function () { applyFilters(section); });
    form.addEventListener("change", function () { applyFilters(section); });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    applyFilters(section);  // a reload may keep the form's values
  });

  var tabs = document.querySelectorAll("[data-tab]");
  tabs.forEach(function (tab) {
    tab.addEventListener("click", function () {
      var kind = tab.getAttribute("data-tab");
      tabs.forEach(function (other) { other.setAttribute("aria-pressed", String(other === tab)); });
      document.querySelectorAll("[data-section]").forEach(function (section) {
        section.hidden = section.id !== kind;
      });
    });
  });
}());
