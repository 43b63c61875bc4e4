// hallclock office page: every hall's round and every table, read-only.  It
// polls /state and shows its texts: the host made every time and word with the
// projector's own views (the digits of the next seconds come in "ahead"), so
// this page formats no time.  Names from the logs go in as text, never markup.
"use strict";
(function () {
  var POLL_MS = 1000;
  var SIZES_VH = [2.6, 2.3, 2.0, 1.8, 1.6, 1.4, 1.25, 1.1];  // the tables' type, largest first
  var state = null, receivedAt = 0, failures = 0;

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text) { e.textContent = text; }
    return e;
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // the entry of a hall's "ahead" that holds now
  function current(h) {
    var ahead = h.ahead || [], pick = ahead.length ? ahead[0] : null;
    var elapsed = performance.now() - receivedAt;
    ahead.forEach(function (a) { if (a.in_ms <= elapsed) { pick = a; } });
    return pick;
  }

  function digitsOf(h) {
    if (h.waiting) { return "--:--"; }
    var now = current(h);
    return now ? now.digits : (h.digits || "");
  }

  function hallBox(h) {
    var box = el("section", "hall");
    box.className = ["hall", h.waiting ? "waiting" : "", h.last && !h.paused ? "last" : "",
                     h.ended ? "over" : ""].join(" ").trim();
    var head = el("h2", "", "");
    head.appendChild(el("span", "name", h.hall));
    if (h.round) { head.appendChild(el("span", "round", "round " + h.round)); }
    box.appendChild(head);
    box.appendChild(el("div", "title", h.waiting ? (h.message || "") : (h.title || "")));
    box.appendChild(el("div", "digits", digitsOf(h)));
    var sub = [h.subtitle, h.simulation].filter(Boolean).join(" · ");
    box.appendChild(el("div", "sub", sub));
    var due = (h.due || [])[0];
    box.appendChild(el("div", "due", due ? due.text + " due at " + due.at : ""));
    if (h.playout) { box.appendChild(el("div", "playout", h.playout)); }
    if ((h.reboots || []).length) {
      var notes = el("ol", "notes");
      h.reboots.forEach(function (r) { notes.appendChild(el("li", "", r)); });
      box.appendChild(notes);
    }
    var list = el("ol", "tables");
    (h.tables || []).forEach(function (t) { list.appendChild(el("li", "", t.line)); });
    box.appendChild(list);
    box.appendChild(el("div", "more", ""));
    return box;
  }

  function bottomLimit() {
    return Math.min(window.innerHeight,
                    document.querySelector("footer").getBoundingClientRect().top) - 1;
  }

  function inside(e, bottom) {
    var r = e.getBoundingClientRect();
    return r.top >= 0 && r.left >= 0 && r.right <= window.innerWidth + 0.5 &&
      r.bottom <= bottom && e.scrollWidth <= e.clientWidth + 1;
  }

  function allFit() {
    var bottom = bottomLimit(), lis = document.querySelectorAll("#halls li, #halls .digits");
    for (var i = 0; i < lis.length; i++) { if (!inside(lis[i], bottom)) { return false; } }
    return true;
  }

  // beyond what fits at the smallest type: a hall shows the tables that fit
  // and says how many it does not show; a hall below the screen is counted
  function cut() {
    var bottom = bottomLimit(), hidden = 0;
    var boxes = document.querySelectorAll("#halls .hall");
    for (var i = 0; i < boxes.length; i++) {
      var box = boxes[i], list = box.querySelector(".tables"), more = box.querySelector(".more");
      if (box.getBoundingClientRect().top + 40 > bottom) {
        box.hidden = true; hidden += 1; continue;
      }
      var total = list.children.length, gone = 0;
      while (list.children.length && (!inside(more, bottom) ||
             !inside(list.lastElementChild, bottom))) {
        list.removeChild(list.lastElementChild);
        gone += 1;
        more.textContent = plural(gone, "more table") + " of " + total + " not shown";
      }
      if (!inside(box.querySelector(".digits"), bottom)) { box.hidden = true; hidden += 1; }
    }
    $("hidden").textContent = hidden ? plural(hidden, "more hall") + " not shown" : "";
  }

  function show(s) {
    state = s;
    var halls = s.halls || [];
    $("summary").textContent = halls.length ?
      plural(halls.length, "hall") + " · " + plural(s.tables, "table") :
      "no hall's log yet in " + s.folder;
    var grid = $("halls");
    var cols = Math.max(1, Math.min(halls.length, window.innerWidth < 900 ? 2 : 4));
    grid.style.gridTemplateColumns = "repeat(" + cols + ", minmax(0, 1fr))";
    grid.textContent = "";
    halls.forEach(function (h) { grid.appendChild(hallBox(h)); });
    for (var i = 0; i < SIZES_VH.length; i++) {
      grid.style.fontSize = "";
      var lists = grid.querySelectorAll(".tables");
      for (var k = 0; k < lists.length; k++) { lists[k].style.fontSize = SIZES_VH[i] + "vh"; }
      if (allFit()) { $("hidden").textContent = ""; return; }
    }
    cut();
  }

  function tick() {
    if (!state) { return; }
    var boxes = document.querySelectorAll("#halls .hall");
    (state.halls || []).forEach(function (h, i) {
      var d = boxes[i] && boxes[i].querySelector(".digits");
      var text = digitsOf(h);
      if (d && d.textContent !== text) { d.textContent = text; }
    });
    $("office").className = failures > 2 ? "lost" : "";
  }

  function poll() {
    var req = new XMLHttpRequest();
    function fail() {
      failures += 1;
      $("link").textContent = "no contact with the office";
      tick();
      setTimeout(poll, POLL_MS * 2);
    }
    req.open("GET", "/state", true);
    req.timeout = 3000;
    req.onload = function () {
      if (req.status !== 200) { fail(); return; }
      failures = 0;
      $("link").textContent = "live · read-only";
      // the answer may have been made a little before (shared by every spectator)
      receivedAt = performance.now() - (parseInt(req.getResponseHeader("X-Age-Ms"), 10) || 0);
      show(JSON.parse(req.responseText));
      setTimeout(poll, POLL_MS);
    };
    req.onerror = fail;
    req.ontimeout = fail;
    req.send();
  }

  setInterval(tick, 200);
  poll();
})();
