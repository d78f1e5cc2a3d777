// Copy buttons. A <button data-copy-target="ID" data-copied-label="...">
// copies the value of the element with that id to the clipboard, then says
// so. The buttons start hidden: without JavaScript they could do nothing.
(function () {
  "use strict";

  function reveal(root) {
    root.querySelectorAll("button[data-copy-target]").forEach(function (button) {
      button.hidden = false;
    });
  }

  // selectAndCopy is the way that works without the Clipboard API (which
  // needs https or localhost).
  function selectAndCopy(source) {
    source.focus();
    source.select();
    return document.execCommand("copy");
  }

  function copy(button) {
    var source = document.getElementById(button.dataset.copyTarget);
    if (!source) {
      return;
    }
    var done = function () {
      button.textContent = button.dataset.copiedLabel;
    };
    var fallback = function () {
      if (selectAndCopy(source)) {
        done();
      }
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(source.value).then(done, fallback);
    } else {
      fallback();
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy-target]");
    if (button) {
      copy(button);
    }
  });
  // Content htmx swaps in may bring copy buttons too.
  document.addEventListener("htmx:load", function (event) {
    reveal(event.target);
  });
  reveal(document);
})();
