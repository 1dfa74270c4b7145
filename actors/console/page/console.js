// The console page: polls /api/state every second and redraws. Every value
// from the document reaches the DOM through textContent or a canvas, never
// as markup. History lives here, capped, and starts again on reload (the
// event log is the server's and survives).
"use strict";

const MAX_POINTS = 2000;
const SPLIT_PARTS = [["ps_compute", "#2f6fdb"], ["issue_tiles", "#8e44ad"],
                     ["wait_on_devices", "#e67e22"], ["allgather", "#16a085"]];
const trail = { loss: [], step: [], tiles: [], alive: [], split: {} };
SPLIT_PARTS.forEach(([name]) => { trail.split[name] = []; });
let previous = null;  // the last training sample: derived rates need two
// The table's view: the server sorts, filters and cuts the page
// (/api/state?page=...), so a fleet of thousands costs one page of rows.
const view = { page: 0, per_page: 100, sort: "id", dir: "asc", filter: "" };
let lastDoc = null;
let pollTimer = null;
let asked = 0;  // polls sent: an answer to an older one is dropped
const pageStarted = performance.now();

function $(id) { return document.getElementById(id); }

function push(series, point) {
  series.push(point);
  if (series.length > MAX_POINTS) series.splice(0, series.length - MAX_POINTS);
}

function num(v) { return typeof v === "number" && isFinite(v) ? v : null; }

function fixed(v, digits) { return num(v) === null ? "-" : v.toFixed(digits); }

function elapsed(seconds) {
  if (num(seconds) === null) return "-";
  const s = Math.floor(seconds);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
  return (h > 0 ? h + ":" + String(m).padStart(2, "0") : String(m)) + ":" + String(r).padStart(2, "0");
}

// Samples whose step went back (a new run, a resume) start the charts again.
function record(doc) {
  const t = doc.training;
  const now = (performance.now() - pageStarted) / 1000;
  if (doc.fleet && num(doc.fleet.alive) !== null) push(trail.alive, [now, doc.fleet.alive]);
  if (!t || num(t.step) === null) return;
  if (previous && t.step < previous.step) {
    for (const k of ["loss", "step", "tiles"]) trail[k].length = 0;
    SPLIT_PARTS.forEach(([name]) => { trail.split[name].length = 0; });
    previous = null;
  }
  if (num(t.loss) !== null && (!previous || t.step !== previous.step)) push(trail.loss, [t.step, t.loss]);
  if (previous && t.step > previous.step && t.seconds > previous.seconds) {
    const steps = t.step - previous.step, dt = t.seconds - previous.seconds;
    push(trail.step, [t.seconds, dt / steps]);
    if (num(t.tiles) !== null && num(previous.tiles) !== null)
      push(trail.tiles, [t.seconds, Math.max(0, t.tiles - previous.tiles) / dt]);
    // The report's split is an average over the run: the interval's own
    // share is the difference of the running totals.
    const now_split = t.step_split_seconds || {}, then_split = previous.step_split_seconds || {};
    SPLIT_PARTS.forEach(([name]) => {
      const a = num(now_split[name]), b = num(then_split[name]);
      if (a === null || b === null) return;
      push(trail.split[name], [t.seconds, Math.max(0, (a * t.step - b * previous.step) / steps)]);
    });
  }
  if (!previous || t.step !== previous.step) previous = t;
}

function draw_chart(canvas, series, x_label) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, left = 52, bottom = 22, top = 8, right = 8;
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px sans-serif";
  ctx.fillStyle = "#666";
  const all = series.flatMap(s => s.points);
  if (all.length < 2) {
    ctx.fillText("waiting for data", left, h / 2);
    return;
  }
  let x0 = Math.min(...all.map(p => p[0])), x1 = Math.max(...all.map(p => p[0]));
  let y0 = Math.min(0, ...all.map(p => p[1])), y1 = Math.max(...all.map(p => p[1]));
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) y1 = y0 + 1;
  y1 += (y1 - y0) * 0.05;
  const px = x => left + (x - x0) / (x1 - x0) * (w - left - right);
  const py = y => h - bottom - (y - y0) / (y1 - y0) * (h - bottom - top);
  ctx.strokeStyle = "#ddd";
  ctx.lineWidth = 1;
  for (let i = 0; i <= 4; ++i) {
    const y = y0 + (y1 - y0) * i / 4;
    ctx.beginPath(); ctx.moveTo(left, py(y)); ctx.lineTo(w - right, py(y)); ctx.stroke();
    ctx.fillText(y.toPrecision(3), 2, py(y) + 4);
  }
  ctx.fillText(x0.toPrecision(4), left, h - 6);
  const end = x1.toPrecision(4) + " " + x_label;
  ctx.fillText(end, w - right - ctx.measureText(end).width, h - 6);
  for (const s of series) {
    if (s.points.length < 1) continue;
    ctx.strokeStyle = s.color;
    ctx.lineWidth = s.width || 1.5;
    ctx.beginPath();
    s.points.forEach((p, i) => i === 0 ? ctx.moveTo(px(p[0]), py(p[1])) : ctx.lineTo(px(p[0]), py(p[1])));
    ctx.stroke();
  }
}

function draw_charts() {
  draw_chart($("c-loss"), [{ points: trail.loss, color: "#c0392b" }], "step");
  const step_series = [{ points: trail.step, color: "#222", width: 2 }];
  SPLIT_PARTS.forEach(([name, color]) => step_series.push({ points: trail.split[name], color: color }));
  draw_chart($("c-step"), step_series, "s");
  draw_chart($("c-tiles"), [{ points: trail.tiles, color: "#2f6fdb" }], "s");
  draw_chart($("c-fleet"), [{ points: trail.alive, color: "#1b7f3b" }], "s (page)");
}

function legend() {
  const box = $("l-step");
  const entries = [["step", "#222"]].concat(SPLIT_PARTS);
  for (const [name, color] of entries) {
    const span = document.createElement("span");
    span.style.setProperty("--c", color);
    span.textContent = name;
    box.appendChild(span);
  }
}

// One row per device: the fleet's view (state, phi) joined with the
// training accounts (tiles, bytes, busy time) by id.
// In the server's order (fleet.page.ids); devices the accounts know but the
// fleet no longer lists (left the run) are "gone".
function device_rows(doc) {
  const t = doc.training || {};
  const accounts = new Map();
  for (const a of (t.per_device || [])) accounts.set(a.id, a);
  const listed = new Map();
  for (const d of ((doc.fleet && doc.fleet.devices) || [])) listed.set(d.id, d);
  const seconds = num(t.seconds);
  const page = (doc.fleet && doc.fleet.page) || {};
  const ids = Array.isArray(page.ids) ? page.ids : [...new Set([...listed.keys(), ...accounts.keys()])];
  return ids.map(id => row_of(listed.get(id) || { id: id, state: "gone" }, accounts.get(id) || {}, seconds));
}

function row_of(d, a, seconds) {
  const busy = num(a.busy_seconds) !== null && seconds ? 100 * a.busy_seconds / seconds : null;
  return {
    id: d.id, profile: d.profile || a.profile || "", state: d.state || "",
    tiles: num(a.tiles), mb_down: num(a.bytes_down) === null ? null : a.bytes_down / 1e6,
    mb_up: num(a.bytes_up) === null ? null : a.bytes_up / 1e6, busy: busy,
    refused: num(a.refused), phi: num(d.phi),
  };
}

function state_class(state) {
  return ["alive", "suspected", "dead", "quarantined", "draining"].includes(state) ? "s-" + state : "s-other";
}

function render_table(rows, page) {
  const body = document.createElement("tbody");
  for (const r of rows) {
    const tr = document.createElement("tr");
    const cells = [String(r.id), r.profile, r.state, r.tiles === null ? "-" : String(r.tiles),
                   fixed(r.mb_down, 1), fixed(r.mb_up, 1), fixed(r.busy, 1),
                   r.refused === null ? "-" : String(r.refused), fixed(r.phi, 2)];
    cells.forEach((text, i) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (i === 2) td.className = "state " + state_class(r.state);
      if (i === 1) td.style.textAlign = "left";
      tr.appendChild(td);
    });
    tr.appendChild(drain_cell(r));
    tr.dataset.device = String(r.id);
    body.appendChild(tr);
  }
  $("fleet").replaceChild(body, $("fleet").tBodies[0]);
  for (const th of document.querySelectorAll("#fleet th")) {
    th.classList.toggle("sorted-asc", th.dataset.key === view.sort && view.dir === "asc");
    th.classList.toggle("sorted-desc", th.dataset.key === view.sort && view.dir === "desc");
  }
  render_pager(page, rows.length);
}

// "rows 101-200 of 1000 devices", the page's buttons, and the page kept
// within the pages there are when devices leave.
function render_pager(page, shown) {
  const total = num(page.total), matched = num(page.matched);
  const first = view.page * view.per_page;
  let text = shown === 0 ? "no rows" : "rows " + (first + 1) + "\u2013" + (first + shown);
  if (matched !== null) text += " of " + matched + (view.filter ? " matching" : "");
  if (total !== null) text += " (" + total + " devices)";
  $("pager-text").textContent = text;
  const pages = num(page.pages);
  $("b-prev").disabled = view.page === 0;
  $("b-next").disabled = pages === null || view.page + 1 >= pages;
  if (pages !== null && pages > 0 && view.page >= pages) {
    view.page = pages - 1;
    poll_now();
  }
}

// A drain button for a device that still gets work.
function drain_cell(r) {
  const td = document.createElement("td");
  if (r.state !== "alive" && r.state !== "suspected") return td;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "drain";
  button.textContent = "drain";
  button.title = "give device " + r.id + " no new work";
  button.addEventListener("click", () => control("drain/" + r.id));
  td.appendChild(button);
  return td;
}

// Sends a control with the token typed on the page (kept in the input
// only: never stored) and shows the console's answer.
async function control(what) {
  const out = $("control-result");
  try {
    const answer = await fetch("/api/control/" + what, {
      method: "POST", cache: "no-store",
      headers: { "Authorization": "Bearer " + $("token").value.trim() },
    });
    const text = (await answer.text()).trim();
    out.textContent = what + ": " + (answer.ok ? text : answer.status + " " + text);
    out.className = answer.ok ? "" : "refused";
  } catch (err) {
    out.textContent = what + ": no answer (" + err.message + ")";
    out.className = "refused";
  }
}

function render_controls(doc) {
  const c = doc.controls || {};
  const t = doc.training;
  $("h-run").textContent = !t ? "-" : c.paused ? "paused" : "running";
  $("h-run").className = c.paused ? "s-suspected" : "";
  $("b-pause").disabled = !c.enabled || !c.loop_attached || c.paused;
  $("b-resume").disabled = !c.enabled || !c.loop_attached || !c.paused;
  $("b-checkpoint").disabled = !c.enabled || !c.loop_attached || !c.checkpoints;
  $("controls-note").textContent = !c.enabled ? "(off: the console was started without --admin-token)"
    : !c.checkpoints ? "(checkpoint now needs a run with --checkpoint-dir)"
    : c.checkpoint_pending ? "(a checkpoint is asked for)" : "";
}

function cell_row(cells, left) {
  const tr = document.createElement("tr");
  cells.forEach((text, i) => {
    const td = document.createElement("td");
    td.textContent = text;
    if (left.includes(i)) td.style.textAlign = "left";
    tr.appendChild(td);
  });
  return tr;
}

function render_ps(doc) {
  const shards = document.createElement("tbody");
  const trained = (doc.training && doc.training.seconds) || 0;
  for (const s of ((doc.training && doc.training.shards) || []))
    shards.appendChild(cell_row([String(s.shard), String(s.step), fixed(s.bytes_down / 1e6, 1),
                                 fixed(s.bytes_up / 1e6, 1), String(s.tiles),
                                 fixed(s.memory_bytes / 1e6, 2),
                                 s.shard_peak_rss_bytes ? fixed(s.shard_peak_rss_bytes / 1e6, 0) : "\u2013",
                                 fixed(s.wait_seconds || 0, 1),
                                 trained > 0 ? fixed(100 * ((s.issue_seconds || 0) + (s.wait_seconds || 0)) / trained, 0) + "%" : "\u2013",
                                 fixed((s.egress_seconds || 0) + (s.ingress_seconds || 0), 1)], []));
  $("shards").replaceChild(shards, $("shards").tBodies[0]);
  const relays = document.createElement("tbody");
  const tier = (doc.fleet && doc.fleet.relays) || [];
  for (const r of tier)
    relays.appendChild(cell_row([r.name, r.state, r.devices.join(" "), fixed(r.bytes_down / 1e6, 1),
                                 fixed(r.bytes_up / 1e6, 1), fixed(100 * r.hit_rate, 0) + "%", String(r.misses),
                                 fixed(r.store_bytes / 1e6, 0)], [0, 1, 2]));
  $("relays").replaceChild(relays, $("relays").tBodies[0]);
  $("relay-tier").hidden = tier.length === 0;
  const plans = document.createElement("tbody");
  const sorted = (doc.plans || []).slice().sort((a, b) => a.m - b.m || a.n - b.n || a.k - b.k);
  for (const p of sorted)
    plans.appendChild(cell_row([p.m + "\u00d7" + p.n + "\u00d7" + p.k, p.role,
                                p.local ? "local" : p.grid.join("\u00d7"), String(p.tiles),
                                p.devices.length ? p.devices.join(" ") : "-",
                                fixed(p.predicted_seconds * 1000, 3), p.bound], [0, 1, 4, 6]));
  $("plans").replaceChild(plans, $("plans").tBodies[0]);
}

// Cold (idle) blue to hot (always busy) red.
function heat_colour(share) {
  const s = Math.max(0, Math.min(1, share));
  const hue = 220 - 220 * s;
  return "hsl(" + hue.toFixed(0) + ", 70%, " + (55 - 10 * s).toFixed(0) + "%)";
}

// The page's devices (the table's rows), so its size is bounded too.
function render_heat(rows) {
  const strip = $("heat");
  const cells = rows.slice().sort((a, b) => a.id - b.id).map(r => {
    const cell = document.createElement("div");
    cell.textContent = String(r.id);
    cell.style.background = r.busy === null ? "#bbb" : heat_colour(r.busy / 100);
    cell.title = "device " + r.id + " (" + r.profile + ", " + r.state + "): " +
                 (r.busy === null ? "no accounts yet" : r.busy.toFixed(1) + "% busy");
    return cell;
  });
  strip.replaceChildren(...cells);
}

let eventsShown = "";  // what the list shows: rebuilt only when the log moved
function render_events(doc) {
  const events = doc.events || [];
  const last = events.length ? events[events.length - 1] : {};
  const key = events.length + "/" + last.time + "/" + last.kind + "/" + last.device + "/" + doc.events_dropped;
  if (key === eventsShown) return;
  eventsShown = key;
  const list = $("events");
  const items = events.slice().reverse().map(e => {
    const li = document.createElement("li");
    let text = "+" + elapsed(e.time) + "  " + e.kind;
    if (num(e.device) !== null) text += "  device " + e.device;
    if (num(e.phi) !== null) text += "  phi " + e.phi.toFixed(2);
    if (typeof e.detail === "string") text += "  " + e.detail;
    li.textContent = text;
    li.className = e.kind === "drain" ? "s-draining"
      : ["pause", "paused", "resume", "resumed", "checkpoint"].includes(e.kind) ? "s-control"
      : state_class(e.kind === "suspect" ? "suspected" : e.kind === "join" || e.kind === "rejoin" ? "alive" : e.kind);
    return li;
  });
  list.replaceChildren(...items);
  const dropped = num(doc.events_dropped) || 0;
  $("events-note").textContent = "(" + events.length + " kept, times since the console started" +
    (dropped > 0 ? "; " + dropped + " older ones dropped" : "") + ")";
}

function render_header(doc) {
  const t = doc.training || {};
  const counts = { alive: 0, draining: 0, suspected: 0, dead: 0, quarantined: 0 };
  const states = doc.fleet && doc.fleet.page && doc.fleet.page.states;
  if (states) for (const k in counts) counts[k] = num(states[k]) || 0;
  else for (const d of ((doc.fleet && doc.fleet.devices) || []))
    if (d.state in counts) counts[d.state] += 1;
  $("h-model").textContent = t.model || "-";
  $("h-step").textContent = num(t.step) === null ? "-" : String(t.step);
  $("h-loss").textContent = fixed(t.loss, 4);
  $("h-elapsed").textContent = elapsed(t.seconds);
  $("h-devices").textContent = counts.alive + " alive, " + counts.draining + " draining, " +
                               counts.suspected + " suspected, " + counts.dead + " dead, " +
                               counts.quarantined + " quarantined";
  for (const [id, key] of [["h-tiles", "tiles"], ["h-verified", "tiles_verified"],
                           ["h-rejected", "tiles_rejected"], ["h-quarantined", "devices_quarantined"]])
    $(id).textContent = num(t[key]) === null ? "-" : String(t[key]);
}

function render() {
  if (!lastDoc) return;
  const rows = device_rows(lastDoc);
  render_header(lastDoc);
  render_table(rows, (lastDoc.fleet && lastDoc.fleet.page) || {});
  render_heat(rows);
  render_events(lastDoc);
  render_controls(lastDoc);
  render_ps(lastDoc);
  draw_charts();
}

function status(text, ok) {
  const p = $("connection");
  p.textContent = text;
  p.className = ok ? "ok" : "stale";
}

function state_url() {
  const q = new URLSearchParams({ page: view.page, per_page: view.per_page, sort: view.sort, dir: view.dir });
  if (view.filter) q.set("filter", view.filter);
  return "/api/state?" + q.toString();
}

// Now, not at the next tick: the operator changed the view.
function poll_now() {
  clearTimeout(pollTimer);
  poll();
}

async function poll() {
  const mine = ++asked;
  clearTimeout(pollTimer);
  try {
    const answer = await fetch(state_url(), { cache: "no-store" });
    if (!answer.ok) throw new Error("HTTP " + answer.status + " " + (await answer.text()).trim());
    const doc = await answer.json();
    if (mine !== asked) return;  // a newer poll is on its way
    lastDoc = doc;
    record(doc);
    render();
    status("live, updated " + new Date().toLocaleTimeString(), true);
  } catch (err) {
    if (mine !== asked) return;
    status("no answer (" + err.message + "); retrying", false);
  }
  pollTimer = setTimeout(poll, 1000);
}

function setup() {
  legend();
  for (const th of document.querySelectorAll("#fleet th[data-key]"))
    th.addEventListener("click", () => {
      if (view.sort === th.dataset.key) view.dir = view.dir === "asc" ? "desc" : "asc";
      else { view.sort = th.dataset.key; view.dir = "asc"; }
      view.page = 0;
      poll_now();
    });
  let typing = null;  // a filter is sent once typing pauses
  $("filter").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { view.filter = $("filter").value.trim().slice(0, 64); view.page = 0; poll_now(); }, 250);
  });
  $("b-prev").addEventListener("click", () => { view.page = Math.max(0, view.page - 1); poll_now(); });
  $("b-next").addEventListener("click", () => { view.page += 1; poll_now(); });
  $("per-page").addEventListener("change", () => { view.per_page = Number($("per-page").value); view.page = 0; poll_now(); });
  for (const what of ["pause", "resume", "checkpoint"])
    $("b-" + what).addEventListener("click", () => control(what));
  draw_charts();
  poll();
}

setup();
