// Needs you, in every board tab (docs/rules.md §8): the count in the page title and the
// sidebar, and a browser notification when a session starts needing the owner, naming the
// session and the reason; clicking it opens the request. It reads the server's state on load
// and whenever a refresh ping says requests changed. Nothing is notified for what waited when
// the tab opened, nor for the owner's own answers (they only take requests away).
(function () {
  "use strict";
  var script = document.currentScript;
  var stateUrl = script && script.dataset.state;
  var ASKED = "relaybay-notify-asked";
  var known = null;  // ids seen waiting by this tab
  var baseTitle = document.title.replace(/^\(\d+\) /, "");

  function canNotify() { return "Notification" in window; }

  function askOnce() {
    // The browser's permission is asked for once; the Needs you page offers to ask again.
    if (!canNotify() || Notification.permission !== "default" || localStorage.getItem(ASKED)) return;
    localStorage.setItem(ASKED, "1");
    try { Notification.requestPermission(); } catch (e) { /* an old browser's callback form */ }
  }

  function notify(item) {
    if (!canNotify() || Notification.permission !== "granted") return;
    var note = new Notification(item.session + " needs you", { body: item.reason, tag: "relaybay-request-" + item.id });
    note.onclick = function () { window.focus(); location.href = item.url; note.close(); };
  }

  function show(state) {
    document.title = (state.count ? "(" + state.count + ") " : "") + baseTitle;
    var count = document.querySelector("#needs-you-count .count");
    if (count) {
      count.textContent = state.count;
      count.classList.toggle("zero", !state.count);
    }
    var ids = {};
    state.pending.forEach(function (item) {
      ids[item.id] = true;
      if (known && !known[item.id]) notify(item);
    });
    known = ids;
  }

  function refresh() {
    if (!stateUrl) return;
    fetch(stateUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (state) { if (state) show(state); })
      .catch(function () { /* the next ping tries again */ });
  }

  function start() {
    refresh();
    askOnce();
    ["ping-approvals", "ping-all"].forEach(function (name) { document.body.addEventListener(name, refresh); });
    var offer = document.querySelector(".needs-you-notify");
    if (offer && canNotify() && Notification.permission !== "granted") {
      offer.hidden = false;
      offer.querySelector("[data-notify-ask]").addEventListener("click", function () {
        Notification.requestPermission().then(function () { offer.hidden = Notification.permission === "granted"; });
      });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
