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

  // --tables: every table on one screen, in columns and smaller type as needed;
  // beyond what the screen holds at the smallest type, pages that turn by themselves
  var SIZES_VH = [2.8, 2.4, 2.0, 1.7];
  var MAX_COLUMNS = 4;
  var TURN_MS = parseInt(new URLSearchParams(location.search).get("turn_ms"), 10) || 8000;
  var page = 0, pageTurned = 0;

  // "A Nováková 1:20": each player's name (--pairings, shortened by the host) by its time
  function side(letter, names, i, digits) {
    return letter + " " + (names ? names[i] + " " : "") + digits;
  }

  function tableLine(t) { return t.line; }  // the host's words (display.table_line)

  function fits(list) {
    var bottom = Math.min(window.innerHeight,
                          document.querySelector("footer").getBoundingClientRect().top) - 2;
    if (list.getBoundingClientRect().bottom > bottom) { return false; }
    for (var i = 0; i < list.children.length; i++) {
      var li = list.children[i], r = li.getBoundingClientRect();
      if (li.scrollWidth > li.clientWidth + 1 || r.right > window.innerWidth ||
          r.bottom > bottom) { return false; }
    }
    return true;
  }

  // the largest type and fewest columns at which ``lines`` fit, or null
  function layout(list, lines) {
    fill(list, lines);
    for (var i = 0; i < SIZES_VH.length; i++) {
      for (var cols = 1; cols <= MAX_COLUMNS; cols++) {
        list.style.fontSize = SIZES_VH[i] + "vh";
        list.style.columnCount = cols;
        if (fits(list)) { return true; }
      }
    }
    return false;
  }

  function showTables(s) {
    var box = $("tablebox"), list = $("tables");
    var tables = s.show_tables ? (s.tables || []) : [];
    box.hidden = !tables.length;
    $("face").classList.toggle("with-tables", tables.length > 0);  // before measuring
    if (!tables.length) { fill(list, []); return; }
    var lines = tables.map(tableLine);
    setText("tablepage", "");
    if (layout(list, lines)) { return; }
    // pages: as many tables a page as fit, each page naming which tables it shows
    var per = lines.length;
    while (per > 1) {
      per = Math.max(1, Math.floor(per * 0.85));
      var pages = Math.ceil(lines.length / per);
      setText("tablepage", "tables 1–" + per + " of " + lines.length + " · page 1 of " + pages);
      if (layout(list, lines.slice(0, per))) { break; }
    }
    var count = Math.ceil(lines.length / per);
    if (performance.now() - pageTurned >= TURN_MS) {
      page = (page + 1) % count;
      pageTurned = performance.now();
    }
    page = page % count;
    var first = page * per, last = Math.min(lines.length, first + per);
    setText("tablepage", "tables " + (first + 1) + "–" + last + " of " + lines.length +
            " (" + tables[first].clock + " to " + tables[last - 1].clock + ") · page " +
            (page + 1) + " of " + count + ", turning by itself");
    layout(list, lines.slice(first, last));
  }

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
      failures > 2 ? "lost" : "",
      state.show_tables && (state.tables || []).length ? "with-tables" : ""
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
    setText("subtitle", s.waiting ? (s.message || "") : [s.subtitle, s.simulation]
      .filter(Boolean).join(" · "));
    setText("playout", s.playout || "");
    setText("displays", s.displays && s.view === "clock" ?
            side("A", s.players, 0, s.displays[0]) + "  ·  " +
            side("B", s.players, 1, s.displays[1]) : "");
    fill($("announcements"), (s.reboots || []).concat(
      (s.announcements || []).map(function (a) { return a.text; })));
    fill($("gongs"), (s.due || []).map(function (g) { return g.text + " due at " + g.at; })
         .concat((s.gongs || []).map(gongLine)));
    showTables(s);
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
