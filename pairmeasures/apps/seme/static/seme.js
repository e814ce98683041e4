// Disable a form's buttons once it is submitted, so a double click sends it once (the server also recognises a
// replayed submission id); count the summary's characters.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form").forEach(function (form) {
    form.addEventListener("submit", function () {
      form.querySelectorAll("button").forEach(function (button) { button.disabled = true; });
    });
  });
  var summary = document.getElementById("summary");
  if (summary) {
    var hint = document.querySelector(".hint");
    var limit = summary.maxLength;
    var update = function () { hint.textContent = summary.value.length + " of at most " + limit + " characters."; };
    summary.addEventListener("input", update);
    update();
  }
});
