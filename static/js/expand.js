// Long record texts: clamped to 12 lines with a "Show all" / "Show less" toggle (issue 14).
// Without JavaScript nothing is clamped, so every text can be read in full.
(function () {
  "use strict";
  var SELECTOR = ".pair .text, .issue .text, .amendment .text, .record .text";

  function enhance(root) {
    var texts = (root || document).querySelectorAll(SELECTOR);
    Array.prototype.forEach.call(texts, function (text) {
      if (text.dataset.expandable) return;
      text.dataset.expandable = "1";
      text.classList.add("clamped");
      if (text.scrollHeight <= text.clientHeight + 2) {
        text.classList.remove("clamped");  // short: nothing to expand
        return;
      }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "expand-text";
      button.textContent = "Show all";
      button.setAttribute("aria-expanded", "false");
      button.addEventListener("click", function () {
        var open = text.classList.toggle("clamped") === false;
        button.textContent = open ? "Show less" : "Show all";
        button.setAttribute("aria-expanded", open ? "true" : "false");
      });
      text.insertAdjacentElement("afterend", button);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  // htmx:load fires on every element htmx brings in (rows re-rendered after a decision, pages of rows).
  document.addEventListener("htmx:load", function (event) { enhance(event.target); });
})();
