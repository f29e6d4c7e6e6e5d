// Switchyard capacity map: renders the router's snapshots, received as server-sent events from
// /map/events. Plain DOM, no library; every value is set with textContent, never as HTML.
"use strict";

(function () {
  var statusEl, updatedEl, regionsEl, flowsBody, decisionsBody, truncatedEl;
  var seenDecisions = {};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function num(n) {
    return Number(n || 0).toLocaleString("en-US");
  }

  function tokens(n) {
    n = Number(n || 0);
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (n >= 1e3) return (n / 1e3).toFixed(0) + "k";
    return String(n);
  }

  function pct(free, total) {
    return total > 0 ? Math.round((100 * free) / total) : 0;
  }

  function bar(fraction, cls) {
    var b = el("div", "bar" + (cls ? " " + cls : ""));
    var s = el("span");
    s.style.width = Math.max(0, Math.min(100, fraction * 100)).toFixed(1) + "%";
    b.appendChild(s);
    return b;
  }

  function fig(dl, name, field, value) {
    dl.appendChild(el("dt", null, name));
    var dd = el("dd", null, value);
    dd.setAttribute("data-field", field);
    dl.appendChild(dd);
  }

  function clusterState(c) {
    if (c.drained) return ["drained", "warn"];
    if (c.region_drained) return ["region drained", "warn"];
    if (c.stale) return ["stale", "bad"];
    if (!c.healthy) return ["ejected", "bad"];
    return ["ok", "ok"];
  }

  function renderCluster(c) {
    var st = clusterState(c);
    var tile = el("div", "cluster" + (st[1] === "ok" ? "" : " unavailable"));
    tile.setAttribute("data-cluster", c.name);
    var head = el("div", "cluster-head");
    head.appendChild(el("strong", null, c.name));
    var badge = el("span", "badge " + st[1], st[0]);
    badge.setAttribute("data-field", "state");
    head.appendChild(badge);
    tile.appendChild(head);
    tile.appendChild(bar(c.total_kv_tokens > 0 ? c.free_kv_tokens / c.total_kv_tokens : 0));
    var dl = el("dl", "figs");
    fig(dl, "free KV", "free-kv", tokens(c.free_kv_tokens) + " / " + tokens(c.total_kv_tokens) +
      " · " + pct(c.free_kv_tokens, c.total_kv_tokens) + "%");
    fig(dl, "queue", "queue", num(c.queue_depth));
    fig(dl, "running", "running", num(c.running));
    fig(dl, "ready pods", "ready-pods", num(c.ready_pods));
    fig(dl, "RTT", "rtt", Number(c.rtt_ms || 0).toFixed(1) + " ms");
    fig(dl, "in flight", "in-flight", num(c.in_flight));
    fig(dl, "signal age", "age", num(c.signal_age_ms) + " ms");
    tile.appendChild(dl);
    if (c.models && c.models.length) tile.title = "models: " + c.models.join(", ");
    return tile;
  }

  function renderRegion(r) {
    var card = el("div", "region" + (r.local ? " local" : ""));
    card.setAttribute("data-region", r.name);
    var head = el("div", "region-head");
    head.appendChild(el("h3", null, r.name));
    if (r.local) head.appendChild(el("span", "badge local", "this router"));
    if (r.drained) head.appendChild(el("span", "badge warn", "drained"));
    card.appendChild(head);
    card.appendChild(el("div", "region-sum",
      r.available_clusters + " available, " + r.unavailable_clusters + " unavailable · " +
      num(r.ready_pods) + " ready pods · queue " + num(r.queue_depth) + " · free KV " +
      tokens(r.free_kv_tokens) + " / " + tokens(r.total_kv_tokens)));
    card.appendChild(bar(r.total_kv_tokens > 0 ? r.free_kv_tokens / r.total_kv_tokens : 0));
    var grid = el("div", "clusters");
    (r.clusters || []).forEach(function (c) { grid.appendChild(renderCluster(c)); });
    card.appendChild(grid);
    return card;
  }

  function renderFlows(flows) {
    var max = 0;
    flows.forEach(function (f) { max = Math.max(max, f.per_second); });
    flowsBody.replaceChildren();
    if (!flows.length) {
      var tr = el("tr");
      var td = el("td", "note", "no requests answered yet");
      td.colSpan = 5;
      tr.appendChild(td);
      flowsBody.appendChild(tr);
      return;
    }
    flows.forEach(function (f) {
      var tr = el("tr");
      tr.setAttribute("data-flow", f.to);
      tr.appendChild(el("td", null, f.from));
      tr.appendChild(el("td", f.to === f.from ? "route-local" : "route-overflow", f.to));
      tr.appendChild(el("td", "num", Number(f.per_second).toFixed(2)));
      tr.appendChild(el("td", "num", num(f.total)));
      var td = el("td");
      td.appendChild(bar(max > 0 ? f.per_second / max : 0, "flow"));
      tr.appendChild(td);
      flowsBody.appendChild(tr);
    });
  }

  function routeClass(outcome) {
    if (outcome === "local" || outcome === "overflow" || outcome === "retry") return "route-" + outcome;
    return "route-other";
  }

  function renderDecisions(decisions) {
    var next = {};
    decisionsBody.replaceChildren();
    decisions.forEach(function (d) {
      var key = d.time + "|" + d.cluster + "|" + d.outcome;
      next[key] = true;
      var tr = el("tr", seenDecisions[key] ? "" : "fresh");
      tr.appendChild(el("td", null, new Date(d.time).toLocaleTimeString("en-GB", { hour12: false }) +
        "." + String(new Date(d.time).getMilliseconds()).padStart(3, "0")));
      tr.appendChild(el("td", null, d.model || "—"));
      var cluster = el("td", null, d.cluster || "—");
      cluster.setAttribute("data-field", "cluster");
      tr.appendChild(cluster);
      tr.appendChild(el("td", null, d.region || "—"));
      tr.appendChild(el("td", routeClass(d.outcome), d.outcome));
      tr.appendChild(el("td", null, d.reason || ""));
      decisionsBody.appendChild(tr);
    });
    seenDecisions = next;
  }

  function render(snap) {
    // This router's region first, then the others by name.
    var regions = (snap.regions || []).slice().sort(function (a, b) {
      if (a.local !== b.local) return a.local ? -1 : 1;
      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    });
    regionsEl.replaceChildren();
    if (!regions.length) regionsEl.appendChild(el("p", "note", "No cluster known yet."));
    regions.forEach(function (r) { regionsEl.appendChild(renderRegion(r)); });
    truncatedEl.hidden = !snap.truncated;
    renderFlows(snap.flows || []);
    renderDecisions(snap.decisions || []);
    updatedEl.textContent = "updated " + new Date(snap.time).toLocaleTimeString("en-GB", { hour12: false });
    document.body.setAttribute("data-updated", snap.time);
  }

  function setStatus(text, cls) {
    statusEl.textContent = text;
    statusEl.className = "status " + cls;
  }

  // checkSession sends the browser to the login form when its session has ended (an event
  // stream cannot see the 401 itself).
  function checkSession() {
    fetch("/map/snapshot", { credentials: "same-origin" }).then(function (resp) {
      if (resp.status === 401) window.location.assign("/map/login");
    }).catch(function () {});
  }

  function connect() {
    var es = new EventSource("/map/events");
    es.addEventListener("open", function () { setStatus("live", "live"); });
    es.addEventListener("snapshot", function (ev) {
      setStatus("live", "live");
      try {
        render(JSON.parse(ev.data));
      } catch (e) {
        setStatus("bad update", "reconnecting");
      }
    });
    es.addEventListener("error", function () {
      setStatus("reconnecting…", "reconnecting");
      checkSession();
      if (es.readyState === EventSource.CLOSED) {
        // Refused (too many streams, say): the browser does not retry by itself.
        setTimeout(connect, 5000);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    statusEl = document.getElementById("status");
    updatedEl = document.getElementById("updated");
    regionsEl = document.getElementById("regions");
    flowsBody = document.querySelector("#flows tbody");
    decisionsBody = document.querySelector("#decisions tbody");
    truncatedEl = document.getElementById("truncated");
    connect();
  });
})();
