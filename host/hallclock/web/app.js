// hallclock hall display: polls /state and counts the digits down between polls.
"use strict";
(function () {
  var POLL_MS = 500;
  var state = null;      // the last /state answer
  var receivedAt = 0;    // performance.now() when it arrived
  var failures = 0;

  function $(id) { return document.getElementById(id); }

  // ms -> "m:ss" as a countdown shows it: a second stays until it has fully passed
  function clockText(ms) {
    if (ms === null || ms === undefined) { return "--:--"; }
    var s = Math.ceil(Math.max(0, ms) / 1000);
    var m = Math.floor(s / 60);
    var r = s % 60;
    return m + ":" + (r < 10 ? "0" : "") + r;
  }

  function fill(list, items) {
    list.textContent = "";
    items.forEach(function (text) {
      var li = document.createElement("li");
      li.textContent = text;
      list.appendChild(li);
    });
  }

  function render() {
    if (!state) { return; }
    var face = $("face");
    var left = state.left_ms;
    if (left !== null && left !== undefined && state.running) {
      left = left - (performance.now() - receivedAt);
    }
    var text = clockText(left);
    if ($("digits").textContent !== text) { $("digits").textContent = text; }
    face.className = [
      state.waiting ? "waiting" : "",
      state.status === "paused" ? "paused" : "",
      state.last && state.status !== "paused" ? "last" : "",
      state.ended || (left !== null && left !== undefined && left <= 0) ? "over" : "",
      failures > 2 ? "lost" : ""
    ].join(" ").trim();
  }

  function show(s) {
    state = s;
    receivedAt = performance.now();
    $("title").textContent = s.waiting ? "hallclock" : (s.title || "");
    $("clock").textContent = s.clock ? s.clock + " · " + s.mode : "";
    $("subtitle").textContent = s.waiting ? (s.message || "") : (s.subtitle || "");
    $("playout").textContent = s.playout || "";
    fill($("announcements"), (s.announcements || []).map(function (a) { return a.text; }));
    fill($("gongs"), (s.gongs || []).map(function (g) {
      return g.text + (g.at ? " at " + g.at : "") + (g.move ? " (move " + g.move + ")" : "");
    }));
    $("log").textContent = s.log || "";
    render();
  }

  function poll() {
    var req = new XMLHttpRequest();
    function fail() {
      failures += 1;
      $("link").textContent = "no contact with the hallclock server";
      render();
      setTimeout(poll, POLL_MS * 2);
    }
    req.open("GET", "/state", true);
    req.timeout = 2000;
    req.onload = function () {
      if (req.status !== 200) { fail(); return; }
      failures = 0;
      $("link").textContent = "live";
      show(JSON.parse(req.responseText));
      setTimeout(poll, POLL_MS);
    };
    req.onerror = fail;
    req.ontimeout = fail;
    req.send();
  }

  setInterval(render, 100);
  poll();
})();
