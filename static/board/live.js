// The board's live updates: listen for refresh pings on /ws/board/ and fire "ping-<topic>"
// on <body>. Fragments that show a topic refetch themselves from the server
// (hx-trigger="ping-messages from:body"); this script never builds any markup.
(function () {
  "use strict";
  var scheme = location.protocol === "https:" ? "wss://" : "ws://";
  var delay = 500;
  var missed = false;

  function connect() {
    var socket = new WebSocket(scheme + location.host + "/ws/board/");
    socket.onopen = function () {
      document.documentElement.dataset.live = "on";
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
      document.documentElement.dataset.live = "off";
      missed = true;
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 15000);
    };
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", connect);
  else connect();
})();
