// The leaderboard's sorting, filtering and provenance rows: plain JavaScript, no library, no server.
// A table with class "sortable" sorts by a header button (th[data-col]) on its rows' cells of the same data-col
// (numbers from data-v; cells without one sort last); the first click orders best first (data-best: asc|desc),
// the next one reverses. Rows with class "prov" follow the row they belong to. The filter box and the kind
// menu hide rows of every table with class "filterable" whose data-system or data-kind do not match.
(function () {
  "use strict";

  function rowsOf(body) {
    var groups = [];
    Array.prototype.forEach.call(body.rows, function (row) {
      if (row.classList.contains("prov") && groups.length) {
        groups[groups.length - 1].push(row);
      } else {
        groups.push([row]);
      }
    });
    return groups;
  }

  function keyOf(row, col) {
    var cell = row.querySelector('[data-col="' + col + '"]');
    if (!cell) { return null; }
    var value = cell.getAttribute("data-v");
    if (value === null || value === "") { return null; }
    var number = Number(value);
    return isNaN(number) ? value.toLowerCase() : number;
  }

  function sortTable(table, header) {
    var col = header.getAttribute("data-col");
    var best = header.getAttribute("data-best") || "asc";
    var current = header.getAttribute("aria-sort");
    var ascending = current === "none" || current === null ? best === "asc" : current !== "ascending";
    Array.prototype.forEach.call(table.querySelectorAll("th[data-col]"), function (other) {
      other.setAttribute("aria-sort", "none");
    });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var groups = rowsOf(body).map(function (group, index) {
      return {rows: group, key: keyOf(group[0], col), index: index};
    });
    groups.sort(function (a, b) {
      if (a.key === null && b.key === null) { return a.index - b.index; }
      if (a.key === null) { return 1; }
      if (b.key === null) { return -1; }
      var order = a.key < b.key ? -1 : a.key > b.key ? 1 : a.index - b.index;
      return ascending ? order : -order;
    });
    groups.forEach(function (group) {
      group.rows.forEach(function (row) { body.appendChild(row); });
    });
  }

  function applyFilter() {
    var box = document.getElementById("filter");
    var menu = document.getElementById("kind");
    var text = box ? box.value.trim().toLowerCase() : "";
    var kind = menu ? menu.value : "";
    var shown = 0;
    var total = 0;
    var seen = {};
    Array.prototype.forEach.call(document.querySelectorAll("table.filterable"), function (table) {
      rowsOf(table.tBodies[0]).forEach(function (group) {
        var row = group[0];
        var system = (row.getAttribute("data-system") || "").toLowerCase();
        var visible = system.indexOf(text) >= 0 && (!kind || row.getAttribute("data-kind") === kind);
        row.hidden = !visible;
        group.slice(1).forEach(function (prov) {
          if (!visible) { prov.hidden = true; }
        });
        if (table.classList.contains("counted") && !seen[system]) {
          seen[system] = true;
          total += 1;
          if (visible) { shown += 1; }
        }
      });
    });
    var count = document.getElementById("shown");
    if (count) { count.textContent = shown + " of " + total + " systems shown"; }
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
      Array.prototype.forEach.call(table.querySelectorAll("th[data-col]"), function (header) {
        header.setAttribute("aria-sort", "none");
        var button = header.querySelector("button.sort");
        if (button) {
          button.addEventListener("click", function () { sortTable(table, header); });
        }
      });
    });
    Array.prototype.forEach.call(document.querySelectorAll("button.prov-toggle"), function (button) {
      button.addEventListener("click", function () {
        var row = document.getElementById(button.getAttribute("aria-controls"));
        if (row) {
          row.hidden = !row.hidden;
          button.setAttribute("aria-expanded", row.hidden ? "false" : "true");
        }
      });
    });
    var box = document.getElementById("filter");
    if (box) { box.addEventListener("input", applyFilter); }
    var menu = document.getElementById("kind");
    if (menu) { menu.addEventListener("change", applyFilter); }
    applyFilter();
  });
}());
