// hallclock referee console: polls /api/grid and shows what the server says.
// The page computes no time of its own: every text comes from the server's
// model of the clocks.
"use strict";
(function () {
  var POLL_MS = 500;
  var failures = 0;
  var open = null;          // the clock whose detail is shown
  var reasons = [];
  var ticks = 0;
  var chosen = {};          // a reason picked but not yet tagged, per pause: kept over redraws

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }

  // a table's card, updated in place (a tap on it is never lost to a redraw)
  function card(t) {
    var id = "table-" + t.clock;
    var c = document.getElementById(id);
    if (!c) {
      c = el("div", "table");
      c.id = id;
      c.setAttribute("data-clock", t.clock);
      c.onclick = function () { showDetail(t.clock); };
    }
    var sig = JSON.stringify(t);
    if (c.getAttribute("data-sig") === sig) { return c; }
    c.setAttribute("data-sig", sig);
    c.textContent = "";
    var head = el("div", "line");
    head.appendChild(el("span", "name", t.clock));
    head.appendChild(el("span", "mode", t.mode + (t.round ? " · round " + t.round : "")));
    c.appendChild(head);
    if (t.players) { c.appendChild(el("div", "line players", t.players)); }
    c.appendChild(el("div", "left", t.left));
    var runs = t.finished ? "finished" : t.paused ? "paused (" + (t.player || "hall") + ")" :
      t.player ? t.player + "'s time" : "not running";
    c.appendChild(el("div", "line runs", runs + (t.move ? " · move " + t.move : "")));
    var warn = t.warnings.map(function (w) { return w + "s"; }).join(" ");
    if (t.overtime) { warn = (warn ? warn + " " : "") + "OVERTIME"; }
    if (t.playout_text) { warn = (warn ? warn + " · " : "") + "play-out " + t.playout_text; }
    c.appendChild(el("div", "line warnings", warn));
    if (t.reboot) { c.appendChild(el("div", "line reboot", t.reboot)); }
    c.appendChild(el("div", "line link", t.lost ? "link lost · last heard " + t.last_heard :
      "heard " + t.last_heard + (t.round_left ? " · " + (t.round_left.indexOf(":") > 0 ?
        "round " + t.round_left : t.round_left) : "")));
    c.className = ["table", t.overtime ? "overtime" : "", t.paused ? "paused" : "",
      t.finished ? "finished" : "", t.lost ? "lost" : "",
      t.reboot ? "rebooted" : ""].join(" ").trim();
    return c;
  }

  function show(g) {
    reasons = g.reasons || [];
    $("log").textContent = g.log || "";
    $("note").textContent = [g.note || (g.exists ? "" : "waiting for the log"), g.simulation]
      .filter(Boolean).join(" · ");
    $("count").textContent = g.count || "";
    var rf = $("round");
    if (g.round && !rf.value && document.activeElement !== rf) { rf.value = String(g.round); }
    var grid = $("grid");
    var keep = {};
    g.tables.forEach(function (t, i) {
      var c = card(t);
      keep[c.id] = true;
      if (grid.children[i] !== c) { grid.insertBefore(c, grid.children[i] || null); }
    });
    Array.prototype.slice.call(grid.children).forEach(function (c) {
      if (!keep[c.id]) { grid.removeChild(c); }
    });
    ticks += 1;
    var busy = document.activeElement && document.activeElement.tagName === "SELECT";
    if (open && !busy && ticks % 4 === 0) { loadDetail(open); }  // not under the referee's hand
  }

  function request(method, url, body, done) {
    var req = new XMLHttpRequest();
    req.open(method, url, true);
    req.timeout = 3000;
    var token = $("token").value.trim();
    if (token) { req.setRequestHeader("X-Hallclock-Token", token); }  // never rate-limited
    if (body) {
      req.setRequestHeader("Content-Type", "application/json");
    }
    req.onload = function () {
      var data = null;
      try { data = JSON.parse(req.responseText); } catch (e) { data = null; }
      done(req.status, data);
    };
    req.onerror = req.ontimeout = function () { done(0, null); };
    req.send(body ? JSON.stringify(body) : null);
  }

  function poll() {
    request("GET", "/api/grid", null, function (code, data) {
      if (code !== 200 || !data) {
        failures += 1;
        $("link").textContent = "no contact with the hallclock server";
        setTimeout(poll, POLL_MS * 2);
        return;
      }
      failures = 0;
      $("link").textContent = "live";
      show(data);
      setTimeout(poll, POLL_MS);
    });
  }

  function act(body) {
    request("POST", "/api/action", body, function (code, data) {
      $("answer").textContent = data ? (data.text || data.error || "") : "no answer";
      $("answer").className = code === 200 ? "" : "warn";
      if (open) { loadDetail(open); }
    });
  }

  function row(tbody, cells, cls) {
    var tr = el("tr", cls || "");
    cells.forEach(function (c) {
      var td = el("td");
      if (c instanceof Node) { td.appendChild(c); } else { td.textContent = c; }
      tr.appendChild(td);
    });
    tbody.appendChild(tr);
  }

  function loadDetail(clock) {
    request("GET", "/api/table?clock=" + encodeURIComponent(clock), null, function (code, d) {
      if (code !== 200 || !d || open !== clock) { return; }
      $("detail-clock").textContent = d.clock + (d.players ? " · " + d.players : "") +
        " · " + d.mode + " · session " + d.session;
      var pb = $("pauses").querySelector("tbody");
      pb.textContent = "";
      d.pauses.forEach(function (p) {
        var key = d.clock + "/" + p.session + "/" + p.seq;
        if (p.reason) { delete chosen[key]; }
        var pick = p.reason || chosen[key] || "";
        var sel = el("select");
        sel.className = "reason";
        // an untagged pause offers no reason until the referee picks one
        var none = el("option", "", "choose…");
        none.value = "";
        none.disabled = true;
        none.selected = !pick;
        sel.appendChild(none);
        reasons.forEach(function (r) {
          var o = el("option", "", r.text);
          o.value = r.key;
          if (r.key === pick) { o.selected = true; }
          sel.appendChild(o);
        });
        var b = el("button", "tag", "tag");
        b.type = "button";
        b.disabled = !pick;
        sel.onchange = function () { chosen[key] = sel.value; b.disabled = !sel.value; };
        b.onclick = function () {
          if (!sel.value) { return; }
          act({action: "tag", clock: d.clock, session: p.session, pause_seq: p.seq,
               reason: sel.value});
        };
        row(pb, [String(p.number), p.move === null ? "–" : String(p.move), p.player || "–",
                 p.at, p.length, p.restart, p.reason ? p.reason_text : sel, b],
            p.reason ? "tagged" : "untagged");
      });
      var mb = $("moves").querySelector("tbody");
      mb.textContent = "";
      d.moves.forEach(function (m) {
        row(mb, [String(m.move), m.player, m.start, m.end, m.used, m.warnings, m.overtime,
                 m.pauses, m.notes],
            m.expired ? "expired" : "");
      });
    });
  }

  function showDetail(clock) {
    open = clock;
    $("detail").hidden = false;
    loadDetail(clock);
  }

  $("close").onclick = function () { open = null; $("detail").hidden = true; };
  $("gong").onclick = function () { act({action: "gong"}); };
  $("start").onclick = function () {
    var n = parseInt($("round").value, 10);
    act({action: "start", round: isNaN(n) ? null : n});
  };
  var saved = window.localStorage ? localStorage.getItem("hallclock-token") : null;
  if (saved) { $("token").value = saved; }
  $("token").onchange = function () {
    if (window.localStorage) { localStorage.setItem("hallclock-token", $("token").value); }
  };
  poll();
}());
