/* The Memory page's few lines of behaviour on top of htmx (no build step). */
(function () {
  "use strict";
  var body = document.body;

  // A refusal (422) is a form shown again with the reason next to its field: swap it in.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "422", swap: true, error: false },
    { code: "[45]..", swap: false, error: true }
  ];

  function say(text) {
    var status = document.getElementById("page-status");
    if (status) { status.textContent = text; }
  }

  function live(state, text) {
    var badge = document.getElementById("live-state");
    if (badge) { badge.dataset.state = state; badge.textContent = text; }
  }

  // The page's own refusals come worded in the page's language ("page": true); anything else
  // (the daemon's sign-in and request checks answer in English) is said by its status.
  body.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var reply = null;
    try { reply = JSON.parse(xhr.responseText); } catch (ignored) { /* not JSON */ }
    if (reply && reply.page && reply.error) {
      say(body.dataset.textError + " " + reply.error);
    } else if (xhr.status === 401) {
      say(body.dataset.textSignedOut);
    } else if (xhr.status === 403) {
      say(body.dataset.textForbidden);
    } else {
      say(body.dataset.textHttp.replace("{status}", String(xhr.status)));
    }
  });
  body.addEventListener("htmx:sendError", function () { say(body.dataset.textOffline); });
  // A live element holding an editor or a confirmation (its data-busy selector matches) does
  // not refresh itself: what a person is typing is never replaced.
  body.addEventListener("htmx:beforeRequest", function (event) {
    var element = event.detail.elt;
    var busy = element && element.dataset ? element.dataset.busy : "";
    if (busy && element.hasAttribute("data-live") && element.querySelector(busy)) {
      event.preventDefault();
    }
  });
  // An event that arrives while a live element is fetching itself is not lost: htmx would queue
  // the second fetch on the element the first one replaces, and so drop it; the new element
  // fetches itself again instead. (A fetch that swaps nothing leaves the element, and htmx's
  // queued fetch, in place.)
  var again = {};
  body.addEventListener("htmx:confirm", function (event) {
    var element = event.detail.elt;
    if (element && element.id && element.hasAttribute("data-live") &&
        element.classList.contains("htmx-request")) {
      again[element.id] = true;
    }
  });
  body.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful) { say(""); }
    delete again[event.detail.elt.id];  // still in the page: nothing was replaced
  });
  body.addEventListener("htmx:load", function (event) {
    var element = event.detail.elt;
    if (element && element.id && again[element.id]) {
      delete again[element.id];
      htmx.trigger(element, "sse:gap");
    }
  });
  // After a reconnect, events may have been missed: every live element fetches itself again.
  var opened = false;
  body.addEventListener("htmx:sseOpen", function () {
    live("live", body.dataset.textLive);
    if (opened) {
      document.querySelectorAll("[data-live]").forEach(function (element) {
        htmx.trigger(element, "sse:gap");
      });
    }
    opened = true;
  });
  // The stream cannot say why it failed: a look at the page tells a restarted daemon, whose
  // sign-in this page no longer holds (401), from one that is down (no answer).
  var looked = 0;
  body.addEventListener("htmx:sseError", function () {
    live("reconnecting", body.dataset.textReconnecting);
    if (Date.now() - looked < 5000) { return; }
    looked = Date.now();
    fetch(window.location.href, { method: "HEAD", credentials: "same-origin", cache: "no-store" })
      .then(function (answer) {
        if (answer.status === 401) { say(body.dataset.textSignedOut); }
      })
      .catch(function () { say(body.dataset.textOffline); });
  });
})();

/* Typing [[ in a note's body suggests notes to link: the ids (or summaries) matching what
   follows, from /memory/notes/link-suggestions. Arrow keys move, Enter or Tab picks (the id
   and the closing ]] are put in), Escape closes. */
(function () {
  "use strict";
  var OPEN = /\[\[([^\[\]\n]{0,200})$/;

  function typedLink(area) {
    var before = area.value.slice(0, area.selectionStart);
    var match = OPEN.exec(before);
    return match ? match[1] : null;
  }

  function setup(area) {
    var list = document.getElementById(area.getAttribute("aria-controls") || "note-link-suggestions");
    if (!list || area.dataset.linkReady) { return; }
    area.dataset.linkReady = "1";
    area.setAttribute("aria-controls", list.id);
    var items = [];
    var active = -1;
    var asked = 0;

    function close() {
      list.hidden = true;
      list.textContent = "";
      items = [];
      active = -1;
      area.removeAttribute("aria-activedescendant");
    }

    function mark(index) {
      active = index;
      Array.prototype.forEach.call(list.children, function (option, position) {
        option.setAttribute("aria-selected", position === index ? "true" : "false");
      });
      if (index >= 0) { area.setAttribute("aria-activedescendant", list.children[index].id); }
    }

    function pick(index) {
      var typed = typedLink(area);
      if (typed === null || !items[index]) { close(); return; }
      var start = area.selectionStart - typed.length;
      var rest = area.value.slice(area.selectionStart);
      var closing = rest.slice(0, 2) === "]]" ? "" : "]]";
      area.value = area.value.slice(0, start) + items[index].id + closing + rest;
      var caret = start + items[index].id.length + 2;
      area.setSelectionRange(caret, caret);
      close();
      area.focus();
    }

    function show(found) {
      close();
      items = found;
      if (!found.length) { return; }
      found.forEach(function (item, index) {
        var option = document.createElement("li");
        option.id = list.id + "-" + index;
        option.setAttribute("role", "option");
        option.setAttribute("translate", "no");
        var id = document.createElement("code");
        id.textContent = item.id;
        var summary = document.createElement("span");
        summary.textContent = " " + item.summary;
        option.appendChild(id);
        option.appendChild(summary);
        option.addEventListener("mousedown", function (event) {
          event.preventDefault();
          pick(index);
        });
        list.appendChild(option);
      });
      list.hidden = false;
      mark(0);
    }

    area.addEventListener("input", function () {
      var typed = typedLink(area);
      if (typed === null) { close(); return; }
      var ticket = ++asked;
      var url = area.dataset.linkSuggest;
      url += (url.indexOf("?") < 0 ? "?" : "&") + "q=" + encodeURIComponent(typed);
      fetch(url, { credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : []; })
        .then(function (found) { if (ticket === asked) { show(found); } })
        .catch(function () { close(); });
    });
    area.addEventListener("keydown", function (event) {
      if (list.hidden || !items.length) { return; }
      if (event.key === "ArrowDown") {
        event.preventDefault();
        mark((active + 1) % items.length);
      } else if (event.key === "ArrowUp") {
        event.preventDefault();
        mark((active - 1 + items.length) % items.length);
      } else if (event.key === "Enter" || event.key === "Tab") {
        event.preventDefault();
        pick(active < 0 ? 0 : active);
      } else if (event.key === "Escape") {
        event.preventDefault();
        close();
      }
    });
    area.addEventListener("blur", function () { window.setTimeout(close, 150); });
  }

  function scan(root) {
    (root.querySelectorAll ? root : document).querySelectorAll("textarea[data-link-suggest]")
      .forEach(setup);
  }
  scan(document);
  document.body.addEventListener("htmx:load", function (event) { scan(event.detail.elt); });
})();
