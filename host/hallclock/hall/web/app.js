// hallclock hall display: polls /state and shows what it says.  The digits of
// the next few seconds come with each answer ("ahead", computed on the host by
// the clock's own code), so this page formats no time of its own.
"use strict";
(function () {
  var POLL_MS = 500;
  var state = null;      // the last /state answer
  var receivedAt = 0;    // performance.now() when it arrived
  var failures = 0;

  function $(id) { return document.getElementById(id); }

  function setText(id, text) {
    var el = $(id);
    if (el.textContent !== text) { el.textContent = text; }
  }

  var MAX_TABLES = 12;  // the rows a projected page has room for under the digits

  function fill(list, items) {
    list.textContent = "";
    items.forEach(function (text) {
      var li = document.createElement("li");
      li.textContent = text;
      list.appendChild(li);
    });
  }

  // the entry of "ahead" that holds now
  function current() {
    var ahead = (state && state.ahead) || [];
    var elapsed = performance.now() - receivedAt;
    var pick = ahead.length ? ahead[0] : null;
    ahead.forEach(function (a) { if (a.in_ms <= elapsed) { pick = a; } });
    return pick;
  }

  function render() {
    if (!state) { return; }
    var now = current();
    var digits = state.waiting ? "--:--" : (now ? now.digits : (state.digits || ""));
    setText("digits", digits);
    var banks = state.banks || [];
    var texts = now && now.banks ? now.banks : banks.map(function (b) { return b.text; });
    var box = $("banks");
    if (box.children.length !== banks.length) {
      box.textContent = "";
      banks.forEach(function () {
        var div = document.createElement("div");
        div.className = "bank";
        box.appendChild(div);
      });
    }
    banks.forEach(function (b, i) {
      var div = box.children[i];
      var text = b.player + " " + texts[i];
      if (div.textContent !== text) { div.textContent = text; }
      div.className = "bank" + (b.runs ? " runs" : "");
    });
    $("face").className = [
      state.waiting ? "waiting" : "",
      state.paused ? "paused" : "",
      state.last && !state.paused ? "last" : "",
      state.ended || (!state.running && digits === "0:00") ? "over" : "",
      failures > 2 ? "lost" : ""
    ].join(" ").trim();
  }

  function gongLine(g) {
    return g.text + (g.at ? " at " + g.at : "") + (g.move ? " (move " + g.move + ")" : "");
  }

  function show(s) {
    state = s;
    receivedAt = performance.now();
    setText("title", s.waiting ? "hallclock" : (s.title || ""));
    var where = "";
    if (s.view === "clock" && s.clock) { where = s.clock + " · " + s.mode; }
    if (s.view === "round") { where = "round · " + (s.tables.length || 1) + " table" +
                                      ((s.tables.length || 1) === 1 ? "" : "s"); }
    setText("clock", where);
    setText("subtitle", s.waiting ? (s.message || "") : (s.subtitle || ""));
    setText("playout", s.playout || "");
    setText("displays", s.displays && s.view === "clock" ?
            "A " + s.displays[0] + "  ·  B " + s.displays[1] : "");
    fill($("announcements"), (s.announcements || []).map(function (a) { return a.text; }));
    fill($("gongs"), (s.due || []).map(function (g) { return g.text + " due at " + g.at; })
         .concat((s.gongs || []).map(gongLine)));
    var rows = (s.tables || []).map(function (t) {
      return t.clock + "  " + t.displays[0] + " | " + t.displays[1] +
        (t.state ? "  " + t.state : "");
    });
    if (rows.length > MAX_TABLES) {  // never dropped silently: counted, and where to see them
      var more = rows.length - MAX_TABLES + 1;
      rows = rows.slice(0, MAX_TABLES - 1).concat([more + " more tables (" +
        s.tables[MAX_TABLES - 1].clock + " to " + s.tables[s.tables.length - 1].clock +
        "): every table in the referee's console"]);
    }
    fill($("tables"), rows);
    setText("log", s.log || "");
    render();
  }

  function poll() {
    var req = new XMLHttpRequest();
    function fail() {
      failures += 1;
      setText("link", "no contact with the hallclock server");
      render();
      setTimeout(poll, POLL_MS * 2);
    }
    req.open("GET", "/state", true);
    req.timeout = 2000;
    req.onload = function () {
      if (req.status !== 200) { fail(); return; }
      failures = 0;
      setText("link", "live");
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
