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
  body.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful) { say(""); }
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
  body.addEventListener("htmx:sseError", function () {
    live("reconnecting", body.dataset.textReconnecting);
  });
})();
