// Samsa console: renders the JSON of /api/* into the page, refreshed every second. No build step, no library.
"use strict";

const REFRESH_MS = 1000;
let timer = null;
let generation = 0;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function num(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0; let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v : v.toFixed(1)) + " " + units[i];
}
function rate(r) { return r === null || r === undefined ? "–" : r.toFixed(1) + "/s"; }
function time(ms) { return ms === null || ms === undefined || ms < 0 ? "–" : new Date(ms).toISOString().replace("T", " ").replace("Z", ""); }
function ids(list) { return list.length ? list.join(",") : "none"; }

function table(id, headers, rows) {
  const head = el("tr", {}, headers.map(h => el("th", { class: h.startsWith("#") ? "num" : "" }, h.replace(/^#/, ""))));
  return el("table", { id }, el("thead", {}, head), el("tbody", {}, rows));
}
function td(text, cls) { return el("td", { class: cls || "" }, text); }
function link(href, text) { return el("a", { href }, text); }

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok && !body.error) throw new Error(path + ": HTTP " + response.status);
  return body;
}

function setStatus(text, stale) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = stale ? "stale" : "";
}

// ---------------------------------------------------------------------------------------------- cluster

function brokerRows(data) {
  return data.brokers.map(b => el("tr", { "data-broker": b.id, class: b.up ? "up" : "down" },
    td(b.id, "num"), td(b.host ? b.host + ":" + b.port : "–"), td(b.rack || "–"),
    td(b.up ? "up" : "down", b.up ? "ok state" : "state"),
    td(b.id === data.controller ? "controller" : ""), td(num(b.leaders), "num"), td(num(b.replicas), "num")));
}

function problemRows(list, kind) {
  return list.map(p => el("tr", { "data-tp": p.topic + "-" + p.partition, class: kind },
    td(link("#/topic/" + encodeURIComponent(p.topic), p.topic)), td(p.partition, "num"),
    td(p.leader >= 0 ? p.leader : "none", p.leader >= 0 ? "" : "offline"), td(ids(p.replicas)), td(ids(p.isr))));
}

function topicRows(topics) {
  return topics.map(t => el("tr", { "data-topic": t.name },
    td(link("#/topic/" + encodeURIComponent(t.name), t.name)), td(t.internal ? "internal" : "", "muted"),
    td(t.partitions, "num"), td(t.replication_factor, "num"),
    td(t.under_replicated, t.under_replicated ? "num under" : "num"), td(t.offline, t.offline ? "num offline" : "num"),
    td(num(t.messages), "num"), td(bytes(t.size), "num"), td(rate(t.in_rate), "num")));
}

function groupSummaryRows(groups) {
  return groups.map(g => el("tr", { "data-group": g.group_id },
    td(link("#/groups", g.group_id)), td(g.state || "–"), td(g.members, "num"), td(num(g.lag), "num lag"),
    td(g.error || "", "bad")));
}

function chart(points) {
  const canvas = el("canvas", { id: "chart", width: 900, height: 180 });
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 30;
  const shown = points.slice(-120);
  const top = Math.max(1, ...shown.map(p => Math.max(p.in, p.out)));
  ctx.fillStyle = "#778"; ctx.font = "11px sans-serif";
  ctx.fillText(top.toFixed(0) + " msg/s", 2, 12); ctx.fillText("0", 2, h - 4);
  if (shown.length > 1) {
    const span = Math.round((shown[shown.length - 1].time_ms - shown[0].time_ms) / 1000);
    ctx.fillText("last " + span + " s", w - 60, h - 4);
  }
  ctx.strokeStyle = "#e3e6ea"; ctx.beginPath(); ctx.moveTo(pad, h - pad / 2); ctx.lineTo(w, h - pad / 2); ctx.stroke();
  for (const [key, color] of [["in", "#2b6cd4"], ["out", "#e07b00"]]) {
    ctx.strokeStyle = color; ctx.lineWidth = 2; ctx.beginPath();
    shown.forEach((p, i) => {
      const x = pad + (w - pad) * (shown.length === 1 ? 1 : i / (shown.length - 1));
      const y = h - pad / 2 - (h - pad) * (p[key] / top);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
  }
  const last = shown.length ? shown[shown.length - 1] : { in: 0, out: 0 };
  return el("div", {}, canvas, el("div", { class: "legend" },
    el("span", { class: "in", id: "rate-in" }, "messages in " + rate(last.in)),
    el("span", { class: "out", id: "rate-out" }, "messages out (committed, over 5 s) " + rate(last.out)),
    el("span", { class: "muted" }, "from log end offsets and committed offsets polled every second")));
}

function renderCluster(data) {
  const up = data.brokers.filter(b => b.up).length;
  const view = [
    data.error ? el("p", { class: "error", id: "cluster-error" }, data.error) : null,
    el("div", { class: "cards" },
      el("div", { class: "card" }, "Cluster", el("b", { id: "cluster-id" }, data.cluster_id || "–")),
      el("div", { class: "card" }, "Brokers up", el("b", { id: "brokers-up", class: up < data.brokers.length ? "bad" : "" }, up + " / " + data.brokers.length)),
      el("div", { class: "card" }, "Controller", el("b", { id: "controller" }, data.controller >= 0 ? data.controller : "none")),
      el("div", { class: "card" }, "Partitions", el("b", { id: "partition-count" }, num(data.partition_count))),
      el("div", { class: "card" }, "Under-replicated", el("b", { id: "under-replicated-count", class: data.under_replicated_count ? "warn" : "" }, num(data.under_replicated_count))),
      el("div", { class: "card" }, "Offline", el("b", { id: "offline-count", class: data.offline_count ? "bad" : "" }, num(data.offline_count)))),
    el("h2", {}, "Messages in and out"), chart(data.rates),
    el("h2", {}, "Brokers"),
    table("brokers", ["#id", "address", "rack", "state", "role", "#leaders", "#replicas"], brokerRows(data)),
  ];
  if (data.offline.length) {
    view.push(el("h2", {}, "Offline partitions (no leader)"),
      table("offline", ["topic", "#partition", "leader", "replicas", "isr"], problemRows(data.offline, "offline")));
  }
  if (data.under_replicated.length) {
    view.push(el("h2", {}, "Under-replicated partitions"),
      table("under-replicated", ["topic", "#partition", "leader", "replicas", "isr"], problemRows(data.under_replicated, "under")));
  }
  view.push(el("h2", {}, "Topics"),
    table("topics", ["topic", "", "#partitions", "#RF", "#under-replicated", "#offline", "#messages", "#size", "#in"], topicRows(data.topics)),
    el("h2", {}, "Consumer groups"),
    table("group-summary", ["group", "state", "#members", "#lag", ""], groupSummaryRows(data.groups)));
  return view;
}

// ---------------------------------------------------------------------------------------------- topic

function partitionRows(topic) {
  return topic.partitions.map(p => {
    const leaderDown = p.offline;
    const status = p.offline ? "offline" : p.offsets_error ? "offsets unavailable"
      : p.under_replicated ? "under-replicated" : "ok";
    return el("tr", { "data-partition": p.partition, class: status },
      td(link("#/segments/" + encodeURIComponent(topic.name) + "/" + p.partition, p.partition), "num"),
      td(leaderDown ? (p.leader >= 0 ? p.leader + " (down)" : "none") : p.leader, leaderDown ? "leader offline" : "leader"),
      td(ids(p.replicas), "replicas"), td(ids(p.isr), p.under_replicated ? "isr under" : "isr"),
      td(p.offline_replicas.length ? ids(p.offline_replicas) : "", "bad"),
      td(num(p.log_start_offset), "num start"), td(num(p.log_end_offset), "num end"), td(bytes(p.size), "num size"),
      td(status + (p.offsets_error ? " (" + p.offsets_error + ")" : ""), status === "ok" ? "ok status" : "bad status"));
  });
}

function renderTopic(topic) {
  if (topic.error && !topic.partitions) return [el("p", { class: "error" }, topic.error)];
  const configs = topic.configs.map(c => el("tr", { "data-config": c.name },
    td(c.name), td(c.value === null ? "(sensitive)" : c.value), td(c.is_default ? "default" : "set", c.is_default ? "muted" : "")));
  return [
    el("h2", {}, "Topic ", el("span", { id: "topic-name" }, topic.name), topic.internal ? " (internal)" : ""),
    topic.error ? el("p", { class: "error" }, topic.error) : null,
    el("p", { class: "muted" }, topic.partitions.length + " partitions; messages in " + rate(topic.in_rate) +
      ". Click a partition for its segments on disk."),
    table("partitions", ["#partition", "leader", "replicas", "ISR", "offline replicas", "#log start", "#log end", "#size", "status"], partitionRows(topic)),
    el("h2", {}, "Configs"),
    topic.configs_error ? el("p", { class: "error" }, topic.configs_error) : null,
    table("configs", ["name", "value", "source"], configs),
  ];
}

// ---------------------------------------------------------------------------------------------- segments

function renderSegments(topic, partition, data) {
  const view = [el("h2", {}, "Segments of ", link("#/topic/" + encodeURIComponent(topic), topic), "-" + partition)];
  if (!data.available) return view.concat(el("p", { class: data.error ? "error" : "muted", id: "segments-unavailable" }, data.reason || data.error));
  for (const replica of data.replicas) {
    view.push(el("h2", {}, replica.owner + ": " + replica.log_dir));
    if (replica.error) { view.push(el("p", { class: "error" }, replica.error)); continue; }
    view.push(el("p", { class: "muted" }, "log start offset " + num(replica.log_start_offset)));
    view.push(table("segments", ["#base offset", "#last offset", "#size", "#batches", "#.index entries", "#.timeindex entries", "first timestamp", "max timestamp"],
      replica.segments.map(s => el("tr", { "data-base": s.base_offset },
        td(num(s.base_offset), "num"), td(num(s.last_offset), "num"), td(bytes(s.size), "num"), td(num(s.batches), "num"),
        td(num(s.index_entries), "num"), td(num(s.time_index_entries), "num"),
        td(time(s.first_timestamp)), td(s.error ? s.error : time(s.max_timestamp), s.error ? "bad" : "")))));
  }
  return view;
}

// ---------------------------------------------------------------------------------------------- groups

function renderGroups(data) {
  const view = [el("h2", {}, "Consumer groups")];
  if (data.error) view.push(el("p", { class: "error" }, data.error));
  if (!data.groups.length) view.push(el("p", { class: "muted" }, "No consumer groups."));
  for (const g of data.groups) {
    const section = el("section", { class: "group", "data-group": g.group_id },
      el("h2", {}, g.group_id + " ", el("span", { class: "muted state" }, g.state || ""), " lag ", el("span", { class: "total-lag" }, num(g.lag))),
      g.error ? el("p", { class: "error" }, g.error) : null,
      table("", ["member", "client id", "host", "assignment"], g.members.map(m => el("tr", {},
        td(m.member_id), td(m.client_id), td(m.host), td(m.assignment.join(" "))))),
      table("", ["topic", "#partition", "#committed", "#log end", "#lag", "owner"], g.offsets.map(o =>
        el("tr", { "data-tp": o.topic + "-" + o.partition },
          td(o.topic), td(o.partition, "num"), td(num(o.committed), "num"), td(num(o.log_end_offset), "num"),
          td(num(o.lag), "num lag"), td(o.owner || "–")))));
    view.push(section);
  }
  return view;
}

// ---------------------------------------------------------------------------------------------- router

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "topic" && parts[1]) return { kind: "topic", load: () => getJson("/api/topic?name=" + encodeURIComponent(parts[1])), render: renderTopic };
  if (parts[0] === "segments" && parts[1]) {
    const q = "topic=" + encodeURIComponent(parts[1]) + "&partition=" + encodeURIComponent(parts[2] || "");
    return { kind: "segments", load: () => getJson("/api/segments?" + q), render: d => renderSegments(parts[1], parts[2], d) };
  }
  if (parts[0] === "groups") return { kind: "groups", load: () => getJson("/api/groups"), render: renderGroups };
  return { kind: "cluster", load: () => getJson("/api/cluster"), render: renderCluster };
}

async function refresh() {
  const mine = ++generation;
  const current = route();
  try {
    const data = await current.load();
    if (mine !== generation) return;
    const view = document.getElementById("view");
    view.replaceChildren(...current.render(data).filter(Boolean));
    view.dataset.kind = current.kind;
    view.dataset.time = data.time_ms || Date.now();
    if (window.consoleFirstRenderMs === undefined) window.consoleFirstRenderMs = performance.now();
    setStatus("updated " + new Date().toLocaleTimeString(), false);
  } catch (err) {
    if (mine !== generation) return;
    setStatus("console unreachable: " + err.message, true);
  } finally {
    if (mine === generation) { clearTimeout(timer); timer = setTimeout(refresh, REFRESH_MS); }
  }
}

window.addEventListener("hashchange", refresh);
refresh();
