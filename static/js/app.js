// Keyboard shortcuts for the reconciliation page (j/k move, a accept, r reject, c carry, s send back, ? help)
// and the htmx setting that lets a 409 (stale item) or 400 (bad input) replace the row
// with the server's answer instead of being dropped.
(function () {
  "use strict";

  function configureHtmx() {
    if (!window.htmx) return;
    htmx.config.responseHandling = [
      { code: "204", swap: false },
      { code: "[23]..", swap: true },
      // The server answers these with the row re-rendered and a message in it.
      { code: "409", swap: true, error: false },
      { code: "400", swap: true, error: false },
      { code: "[45]..", swap: false, error: true },
      { code: "...", swap: false },
    ];
  }

  var selectedId = null;
  // The row decided from the keyboard (a, r, c): once its decision is back, the next open row is selected.
  var advanceFrom = null;

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-shortcut-row]"));
  }

  function selected() {
    return selectedId ? document.getElementById(selectedId) : null;
  }

  function select(row, scroll, focus) {
    rows().forEach(function (r) {
      if (r !== row) r.setAttribute("aria-selected", "false");
    });
    if (!row) return;
    row.setAttribute("aria-selected", "true");
    selectedId = row.id;
    if (focus !== false) row.focus({ preventScroll: true });
    if (scroll !== false) row.scrollIntoView({ block: "nearest" });
  }

  // s: "Request a correction" on the selected row's record (the corrections page's form, prefilled).
  function sendBack() {
    var row = selected();
    var link = row && row.querySelector("a[data-correction]");
    if (link) window.location.assign(link.href);
  }

  function isOpen(row) {
    return !!row.querySelector('button[data-decision="accept"]');
  }

  // After a decision from the keyboard: the next open row below (else above), so a reviewer can go
  // a, a, r… down the page. A refused decision leaves its row open and selected.
  function advance(row) {
    if (isOpen(row)) return false;
    var all = rows();
    var index = all.indexOf(row);
    var after = all.slice(index + 1).concat(all.slice(0, Math.max(index, 0)));
    var next = after.filter(isOpen)[0];
    if (!next) return false;
    select(next);
    return true;
  }

  // Set when j is pressed on the last row while more rows wait on the server: the move completes
  // once they have arrived (the page loads its rows in pages, issue 14).
  var moveAfterLoad = false;

  function move(step) {
    var all = rows();
    if (!all.length) return;
    var index = all.indexOf(selected());
    var more = document.getElementById("more-rows");
    var lastPair = all.filter(function (r) { return r.classList.contains("pair"); }).pop();
    if (step > 0 && more && window.htmx && selected() === lastPair) {
      moveAfterLoad = true;
      htmx.trigger(more, "load-more");
      return;
    }
    var next = index < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, index + step));
    select(all[next]);
  }

  function press(decision) {
    var row = selected();
    if (!row) return;
    var button = row.querySelector('button[data-decision="' + decision + '"]');
    if (!button) return;
    var rationale = row.querySelector("[data-rationale]");
    if ((decision === "reject" || decision === "carry") && rationale && !rationale.value.trim()) {
      // A rejection (or carrying an amendment into the Limitations) needs a rationale: ask for it;
      // Enter in the field sends the decision.
      row.dataset.pendingDecision = decision;
      rationale.placeholder = "why " + decision + "? Enter sends";
      rationale.focus();
      return;
    }
    advanceFrom = row.id;
    button.click();
  }

  function toggleHelp(force) {
    var help = document.getElementById("shortcut-help");
    if (!help) return;
    var show = typeof force === "boolean" ? force : help.hidden;
    help.hidden = !show;
    if (show) help.querySelector("button").focus();
    else if (selected()) selected().focus({ preventScroll: true });
  }

  function typing(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName.toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || target.isContentEditable;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (typing(target)) {
      var row = target.closest("[data-shortcut-row]");
      if (event.key === "Enter" && row && target.matches("[data-rationale], input[name=target]")) {
        // The form's default button is disabled, so Enter alone never decides; a pending
        // decision (r, then the rationale) is sent here.
        var pending = row.dataset.pendingDecision;
        if (pending) {
          event.preventDefault();
          delete row.dataset.pendingDecision;
          var button = row.querySelector('button[data-decision="' + pending + '"]');
          if (button) {
            advanceFrom = row.id;
            button.click();
          }
        }
      } else if (event.key === "Escape") {
        target.blur();
        if (row) select(row, false);
      }
      return;
    }
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "a": press("accept"); break;
      case "r": press("reject"); break;
      case "c": press("carry"); break;
      case "s": sendBack(); break;
      case "?": toggleHelp(); break;
      case "Escape": toggleHelp(false); return;
      default: return;
    }
    event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest("[data-help-toggle]");
    if (toggle) {
      toggleHelp();
      return;
    }
    // A click marks its row as selected without moving the focus: taking the focus off a
    // submit button would make htmx forget which button (accept or reject) was pressed.
    var row = event.target.closest("[data-shortcut-row]");
    if (row && row.id !== selectedId) select(row, false, false);
  });

  document.addEventListener("htmx:afterSettle", function () {
    if (!moveAfterLoad) return;
    moveAfterLoad = false;
    move(1);
  });

  // A decision replaces the row: keep the replacement selected so j/k continue from it.
  document.addEventListener("htmx:afterSwap", function (event) {
    var decided = advanceFrom && document.getElementById(advanceFrom);
    if (decided && decided.getAttribute("aria-selected") !== "true" && decided.id === selectedId) {
      advanceFrom = null;
      if (advance(decided)) return;
    }
    var row = selectedId && document.getElementById(selectedId);
    if (row && row.getAttribute("aria-selected") !== "true") {
      // Keep the keyboard focus on the row only if it was there (not in another row's field).
      var active = document.activeElement;
      select(row, false, !active || active === document.body || active === row);
    }
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", configureHtmx);
  else configureHtmx();
})();
