// The board's small scripts. The server renders every piece of markup; these only
//  - listen for refresh pings on /ws/board/ and fire "ping-<topic>" on <body>: fragments that
//    show a topic refetch themselves (hx-trigger="ping-messages from:body");
//  - say in the live dot's tooltip whether the page is connected;
//  - keep "… ago" times counting, from each <time datetime> and the server's clock;
//  - keep a comment composer's text when sending fails, and across a reload, until it is sent.
(function () {
  "use strict";
  var scheme = location.protocol === "https:" ? "wss://" : "ws://";
  var delay = 500;
  var missed = false;
  var since = null;

  // --- Live updates and the live dot ---------------------------------------------------

  function showLive(on) {
    document.documentElement.dataset.live = on ? "on" : "off";
    var title = on
      ? "Live: this page updates itself as sessions and messages change."
      : "Not connected to relaybay" + (since ? " since " + since.toLocaleTimeString() : "") +
        ": this page is not updating; reconnecting…";
    document.querySelectorAll(".live-dot").forEach(function (dot) { dot.title = title; });
  }

  function connect() {
    var socket = new WebSocket(scheme + location.host + "/ws/board/");
    socket.onopen = function () {
      since = null;
      showLive(true);
      delay = 500;
      // Pings sent while the socket was down are lost: refetch everything once.
      if (missed) htmx.trigger(document.body, "ping-all");
      missed = false;
    };
    socket.onmessage = function (event) {
      var topics = JSON.parse(event.data).topics || [];
      topics.forEach(function (topic) { htmx.trigger(document.body, "ping-" + topic); });
    };
    socket.onclose = function () {
      if (!since) since = new Date();
      showLive(false);
      missed = true;
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 15000);
    };
  }

  // --- "… ago" times ---------------------------------------------------------------------

  // The server's clock minus this browser's, so a wrong local clock does not skew the ages.
  var skew = 0;
  var UNITS = [["d", 86400], ["h", 3600], ["m", 60]];

  function age(seconds) {
    for (var i = 0; i < UNITS.length; i++) {
      if (seconds >= UNITS[i][1]) return Math.floor(seconds / UNITS[i][1]) + UNITS[i][0] + " ago";
    }
    return seconds + "s ago";
  }

  function tick() {
    var now = Date.now() + skew;
    document.querySelectorAll("time.ago[datetime]").forEach(function (time) {
      var moment = Date.parse(time.getAttribute("datetime"));
      if (isNaN(moment)) return;
      var text = age(Math.max(0, Math.floor((now - moment) / 1000)));
      if (time.textContent !== text) time.textContent = text;
    });
  }

  // --- Composers -----------------------------------------------------------------------

  var SENDING_FAILED = "Not sent: relaybay did not answer. Your text is kept here; send it again when the server is back.";

  function draftKey(form) { return "relaybay-draft:" + form.dataset.composer; }

  function status(form, text, kind) {
    var line = form.querySelector(".composer-status");
    if (!line) return;
    line.textContent = text;
    line.className = "composer-status" + (kind ? " " + kind : "");
  }

  function restoreDrafts(root) {
    var forms = Array.prototype.slice.call(root.querySelectorAll("form[data-composer]"));
    if (root.matches && root.matches("form[data-composer]")) forms.push(root);
    forms.forEach(function (form) {
      // The server sends the composer back emptied, marked data-sent, once the comment is saved.
      if ("sent" in form.dataset) { sessionStorage.removeItem(draftKey(form)); return; }
      var area = form.querySelector("textarea");
      var draft = sessionStorage.getItem(draftKey(form));
      if (area && draft && !area.value) {
        area.value = draft;
        var details = form.closest("details");
        if (details) details.open = true;
      }
    });
  }

  function composerOf(event) {
    var elt = event.detail && event.detail.elt;
    return elt && elt.closest ? elt.closest("form[data-composer]") : null;
  }

  function start() {
    var served = Date.parse(document.documentElement.dataset.now || "");
    if (!isNaN(served)) skew = served - Date.now();
    tick();
    setInterval(tick, 1000);
    restoreDrafts(document);
    connect();
  }

  document.addEventListener("input", function (event) {
    var form = event.target.closest && event.target.closest("form[data-composer]");
    if (!form) return;
    if (event.target.value) sessionStorage.setItem(draftKey(form), event.target.value);
    else sessionStorage.removeItem(draftKey(form));
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = composerOf(event);
    if (form) status(form, "Sending…", "");
  });
  document.addEventListener("htmx:sendError", function (event) {
    var form = composerOf(event);
    if (form) status(form, SENDING_FAILED, "error");
  });
  document.addEventListener("htmx:responseError", function (event) {
    var form = composerOf(event);
    if (form) status(form, "Not sent: relaybay answered " + event.detail.xhr.status + ". Your text is kept here; try again.", "error");
  });
  // New content (a refetched fragment, a composer the server sent back): its times and drafts.
  document.addEventListener("htmx:load", function (event) { tick(); restoreDrafts(event.detail.elt); });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
