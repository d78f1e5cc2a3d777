// The console's behaviour that needs a script; every page works without it.
//   - The side navigation is a drawer on phones, opened by the top bar's
//     button (shown only with this script), closed by Escape or a click
//     outside it.
//   - A flash message (a toast) can be dismissed.
//   - A list marked data-announce (a cluster's events) says its newest
//     entry in the live region when htmx adds one, for screen readers.
//   - Every <time datetime> (but data-exact ones) shows a relative time
//     ("5 minutes ago") in the reader's language, with the exact time in the
//     reader's time zone on hover; the page's text is the exact time in UTC.
//   - A table wrapper that scrolls can be scrolled from the keyboard.
//   - On a wide screen the side navigation folds to its icons and back,
//     remembered in the kb_nav cookie, which the server draws the page from.
//   - A link marked data-confirm-dialog (to a page that confirms a
//     destructive action) opens that page's confirmation in a <dialog> over
//     the current page; a typed confirmation keeps its submit button disabled
//     until the text matches.
//   - A live page's poller rests while the page's stream is open, and
//     polls again when it drops (liveStreams).
(function () {
  "use strict";

  // Loaded without defer: the drawer's styles apply from the first paint.
  document.documentElement.classList.add("js");

  function setOpen(toggle, nav, open) {
    document.body.classList.toggle("nav-open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) {
      var first = nav.querySelector("a");
      if (first) first.focus();
    }
  }

  function drawer() {
    var toggle = document.querySelector(".nav-toggle");
    var nav = document.getElementById("sidenav");
    if (!toggle || !nav) return;
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      setOpen(toggle, nav, !document.body.classList.contains("nav-open"));
    });
    document.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && document.body.classList.contains("nav-open")) {
        setOpen(toggle, nav, false);
        toggle.focus();
      }
    });
    document.addEventListener("click", function (e) {
      if (document.body.classList.contains("nav-open") && !nav.contains(e.target) && !toggle.contains(e.target)) {
        setOpen(toggle, nav, false);
      }
    });
  }

  function toasts(root) {
    root.querySelectorAll("[data-dismiss]").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        var box = button.closest("." + button.dataset.dismiss);
        if (box) box.remove();
      });
    });
  }

  // A list marked data-announce (a cluster's events) says its newest entry
  // in the live region when htmx adds to it, once each.
  function lastEntry(list) {
    var last = list.lastElementChild;
    return last ? last.textContent.replace(/\s+/g, " ").trim() : "";
  }

  function announce(target) {
    var region = document.getElementById("live-region");
    if (!region || !target.hasAttribute || !target.hasAttribute("data-announce")) return;
    var text = lastEntry(target);
    if (text && text !== target.dataset.announced) {
      target.dataset.announced = text;
      region.textContent = text;
    }
  }


  // A table wrapper that scrolls sideways can be scrolled with the keyboard:
  // it takes focus when it holds nothing else that does.
  function scrollables(root) {
    root.querySelectorAll(".overflow-auto, .table-wrap").forEach(function (el) {
      if (el.scrollWidth > el.clientWidth && !el.querySelector("a, button, input, select, textarea, [tabindex]")) {
        el.tabIndex = 0;
      }
    });
  }

  var units = [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];

  function times(root) {
    var lang = document.documentElement.lang || undefined;
    var rtf = window.Intl && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(lang, { numeric: "auto" }) : null;
    var exact = window.Intl ? new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "medium" }) : null;
    root.querySelectorAll("time[datetime]:not([data-exact])").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when)) return;
      if (exact) el.title = exact.format(when);
      if (!rtf) return;
      var secs = (when.getTime() - Date.now()) / 1000;
      for (var i = 0; i < units.length; i++) {
        if (Math.abs(secs) >= units[i][1] || units[i][0] === "second") {
          el.textContent = rtf.format(Math.round(secs / units[i][1]), units[i][0]);
          break;
        }
      }
    });
  }

  // The side navigation's fold button (wide screens): the cookie keeps the
  // choice for the pages to come, drawn folded by the server.
  function navCollapse() {
    var button = document.querySelector(".nav-collapse");
    if (!button) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var collapsed = document.body.classList.toggle("nav-collapsed");
      button.setAttribute("aria-expanded", collapsed ? "false" : "true");
      document.cookie = "kb_nav=" + (collapsed ? "collapsed" : "expanded") + "; path=/; max-age=31536000; samesite=lax";
    });
  }

  // A typed confirmation (an input with data-confirm-text) keeps its
  // form's submit button disabled until what is typed matches; the server
  // checks it again.
  function typedConfirms(root) {
    root.querySelectorAll("input[data-confirm-text]").forEach(function (input) {
      var form = input.form;
      var submit = form && form.querySelector("button[type=submit]");
      if (!submit) return;
      var check = function () {
        submit.disabled = input.value !== input.dataset.confirmText;
      };
      input.addEventListener("input", check);
      check();
    });
  }

  // A link marked data-confirm-dialog leads to a page that confirms a
  // destructive action: its confirmation ([data-confirm]) opens in a modal
  // <dialog> over this page instead. Escape or Cancel closes it and focus
  // goes back to the link; when the page cannot be had, the link is
  // followed.
  function confirmDialogs() {
    var dialog = null;
    var opener = null;

    function close() {
      if (dialog && dialog.open) dialog.close();
    }

    function open(link, box) {
      if (!dialog) {
        dialog = document.createElement("dialog");
        dialog.className = "confirm-modal";
        dialog.setAttribute("data-testid", "confirm-modal");
        dialog.setAttribute("aria-labelledby", "confirm-title");
        dialog.addEventListener("close", function () {
          dialog.textContent = "";
          if (opener) opener.focus();
        });
        dialog.addEventListener("click", function (e) {
          if (e.target === dialog) close();
          if (e.target.closest && e.target.closest("[data-confirm-cancel]")) {
            e.preventDefault();
            close();
          }
        });
        document.body.appendChild(dialog);
      }
      opener = link;
      dialog.textContent = "";
      dialog.appendChild(document.importNode(box, true));
      typedConfirms(dialog);
      times(dialog);
      dialog.showModal();
      var first = dialog.querySelector("input:not([type=hidden]), button, a[href]");
      if (first) first.focus();
    }

    document.addEventListener("click", function (e) {
      var link = e.target.closest && e.target.closest("a[data-confirm-dialog]");
      if (!link || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      if (!window.fetch || !window.DOMParser || !window.HTMLDialogElement) return;
      e.preventDefault();
      fetch(link.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then(function (resp) {
          if (!resp.ok) throw new Error(resp.status);
          return resp.text();
        })
        .then(function (html) {
          var box = new DOMParser().parseFromString(html, "text/html").querySelector("[data-confirm]");
          if (!box) throw new Error("no confirmation");
          open(link, box);
        })
        .catch(function () {
          window.location.href = link.href;
        });
    });
  }

  // A live page's stream (htmx's SSE extension, sse-connect) brings what
  // its poller would ask for. A poller names its stream's element in
  // data-live-stream; while that stream is open, the poller's requests are
  // cancelled; when the stream errs or closes (a replica gone, a proxy
  // that cuts long requests), they go out again: polling is the fallback.
  // The stream takes up from the last event it sent, so what the poller
  // brought meanwhile may come twice: a list marked data-unique-rows keeps
  // the first row of each data-event-id.
  function liveStreams() {
    function mark(open) {
      return function (e) {
        if (e.target.toggleAttribute) e.target.toggleAttribute("data-stream-open", open);
      };
    }
    document.addEventListener("htmx:sseOpen", mark(true));
    document.addEventListener("htmx:sseError", mark(false));
    document.addEventListener("htmx:sseClose", mark(false));
    document.addEventListener("htmx:beforeRequest", function (e) {
      var elt = e.detail && e.detail.elt;
      var id = elt && elt.getAttribute && elt.getAttribute("data-live-stream");
      var stream = id && document.getElementById(id);
      if (stream && stream.hasAttribute("data-stream-open")) e.preventDefault();
    });
  }

  function uniqueRows(target) {
    if (!target.hasAttribute || !target.hasAttribute("data-unique-rows")) return;
    var seen = {};
    Array.prototype.slice.call(target.children).forEach(function (row) {
      var id = row.getAttribute("data-event-id");
      if (!id) return;
      if (seen[id]) row.remove();
      seen[id] = true;
    });
  }

  liveStreams();

  document.addEventListener("DOMContentLoaded", function () {
    drawer();
    navCollapse();
    typedConfirms(document);
    confirmDialogs();
    toasts(document);
    times(document);
    scrollables(document);
    document.querySelectorAll("[data-announce]").forEach(function (list) {
      list.dataset.announced = lastEntry(list);
    });
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    toasts(e.target);
    times(e.target);
    scrollables(e.target);
    uniqueRows(e.target);
    announce(e.target);
  });
})();
