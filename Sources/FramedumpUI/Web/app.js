// framedump ui: one page over the server's index. The list asks only for the rows it shows
// (pages of 200), so a capture of a million messages scrolls without loading them all.
"use strict";

const ROW = 20, PAGE = 200, MAX_SPACER = 30_000_000, CONN_PAGE = 200;
const token = new URLSearchParams(location.search).get("token");
const $ = (id) => document.getElementById(id);
const state = {
  status: null, connTotal: 0, connPages: new Map(), connOld: new Map(), connGen: 0, connRow: 0, connLoads: new Map(), conn: null, filter: "", trying: "", total: 0, pages: new Map(),
  selected: null, message: null, view: "messages", seqFrom: 0, diffLoaded: false, loading: new Map(),
  sort: "n", desc: false, before: new Map(), first: null, timeFormat: "absolute", rules: [], colours: new Map(),
};
window.framedump = state;  // for the browser tests: what the page believes

// encodeURIComponent, not URLSearchParams: the server reads "+" as a plus, not a space
// (filters have no other way to say one).
function url(path, params = {}) {
  const q = [];
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.push(k + "=" + encodeURIComponent(v));
  if (token) q.push("token=" + encodeURIComponent(token));
  return path + (q.length ? "?" + q.join("&") : "");
}

async function api(path, params) {
  const r = await fetch(url(path, params));
  const body = await r.json();
  if (!r.ok) { const e = new Error(body.error || r.statusText); e.body = body; e.status = r.status; throw e; }
  return body;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    // A style through the CSSOM: the server's Content-Security-Policy refuses style attributes.
    if (k === "class") e.className = v; else if (k === "style") e.style.cssText = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function svg(tag, attrs = {}, text) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const fmtBytes = (n) => n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(1) + " MiB";
const fmtMs = (ms) => ms < 1 ? ms.toFixed(3) + " ms" : ms < 1000 ? ms.toFixed(1) + " ms" : (ms / 1000).toFixed(2) + " s";

// ---- status, connections ----

async function refreshStatus() {
  const s = await api("/api/status");
  state.status = s;
  $("capture").textContent = s.capture + (s.live ? " (live)" : "");
  $("status").textContent = `${s.messages.toLocaleString()} messages, ${s.connections} connections, ${s.packets.toLocaleString()} packets` +
    (s.state === "indexing" ? " — reading…" : s.state === "live" ? " — capturing" : "");
  $("tail-label").hidden = !s.live;
  showLosses(s);
  const notices = [];
  if (s.dropped > 0) notices.push(`${s.dropped.toLocaleString()} older messages were dropped from the page (it keeps the most recent; --keep sets how many).`);
  if (s.error) notices.push("The capture could not be read to its end: " + s.error);
  $("notice").hidden = notices.length === 0;
  $("notice").textContent = notices.join(" ");
  return s;
}

// Losses in plain sight: their counts in the top bar (a click lists them: `event`), and each
// a row of the list among the messages.
const LOSS_WORDS = { gap: ["gap", "gaps"], malformed: ["malformed", "malformed"], resync: ["resync", "resyncs"],
  cut: ["cut frame", "cut frames"], conflict: ["conflict", "conflicts"], notice: ["notice", "notices"], layer: ["layer problem", "layer problems"],
  limit: ["connection evicted", "connections evicted"] };

function showLosses(s) {
  const parts = [];
  for (const [k, [one, many]] of Object.entries(LOSS_WORDS)) {
    const n = (s.losses && s.losses[k]) || 0;
    if (!n) continue;
    parts.push(`${n.toLocaleString()} ${n === 1 ? one : many}` + (k === "gap" && s.lostBytes ? ` (${fmtBytes(s.lostBytes)} lost)` : ""));
  }
  // The bounds the run hit (as the summary's "limit hit:" lines), each with what it did.
  for (const l of s.limits || []) parts.push(`limit hit: ${l.flag} ${l.value.toLocaleString()} (${l.hits.toLocaleString()}×)`);
  $("losses").hidden = parts.length === 0;
  $("losses").textContent = parts.join(", ");
  $("losses").title = ["list them (filter: event)", ...(s.limits || []).map((l) => `${l.flag} ${l.value}: ${l.hits} ${l.what}`)].join("\n");
}

$("losses").addEventListener("click", () => { $("filter").value = "event"; $("filter-form").requestSubmit(); });

// The connections are a virtual list too: pages of CONN_PAGE asked for as they come into view
// (a capture of a million connections would be hundreds of megabytes of JSON at once).
// Counts change during a run: the pages are asked again, the old ones shown meanwhile.
async function refreshConnections() {
  state.connGen++;
  state.connOld = state.connPages;
  state.connPages = new Map();
  await loadConnPage(0);
  renderConnections();
}

// A page being asked for is asked once: a second caller waits for the same answer (a caller
// that redraws when it comes must not find it "missing" and ask again at once, in a loop).
function loadConnPage(p) {
  const gen = state.connGen, key = `${gen}:${p}`;
  if (state.connPages.has(p)) return Promise.resolve();
  if (!state.connLoads.has(key)) {
    state.connLoads.set(key, api("/api/connections", { from: p * CONN_PAGE, count: CONN_PAGE }).then((r) => {
      if (gen !== state.connGen) return;
      state.connTotal = r.total;
      state.connPages.set(p, r.connections);
      state.connVersion = (state.connVersion || 0) + 1;
    }).finally(() => state.connLoads.delete(key)));
  }
  return state.connLoads.get(key);
}

function renderConnections() {
  const box = $("connections-pane").querySelector(".scroll"), total = state.connTotal, RH = state.connRow || 22;
  $("connection-count").textContent = `(${total.toLocaleString()})`;
  const scale = total * RH > MAX_SPACER ? MAX_SPACER / (total * RH) : 1;
  const top = Math.max(0, box.scrollTop - RH);  // below the "all" row
  const first = Math.max(0, Math.floor(top / scale / RH) - 5);
  const last = Math.min(total, first + Math.ceil(box.clientHeight / RH) + 10);
  const missing = [];
  for (let p = Math.floor(first / CONN_PAGE); p * CONN_PAGE < last; p++) if (!state.connPages.has(p)) missing.push(p);
  if (missing.length) Promise.all(missing.map(loadConnPage)).then(renderConnections);
  const before = scale === 1 ? first * RH : Math.max(0, top - (top / scale / RH - first) * RH);
  // Drawn again only when what it shows changed (a row replaced under the pointer loses its click).
  const shownKey = [first, last, total, before, state.connVersion, RH].join();
  if (shownKey === state.connShown) return;
  state.connShown = shownKey;
  const spacer = (h) => el("tr", { class: "spacer" }, el("td", { colspan: 7, style: `height:${h}px;padding:0;border:0` }));
  const rows = [el("tr", { class: state.conn === null ? "sel" : "", "data-conn": "", onclick: () => selectConnection(null) },
    el("td", {}, "all"), el("td", { colspan: 6 }, "every connection")), spacer(before)];
  for (let i = first; i < last; i++) {
    const p = Math.floor(i / CONN_PAGE);
    const c = (state.connPages.get(p) ?? state.connOld.get(p) ?? [])[i % CONN_PAGE];
    rows.push(c ? connectionRow(c) : el("tr", { class: "pending" }, el("td", {}, i), el("td", { colspan: 6 }, "…")));
  }
  rows.push(spacer(Math.max(0, Math.ceil(total * RH * scale) - before - (last - first) * RH)));
  $("connections").tBodies[0].replaceChildren(...rows);
  // Rows are one line each: their height, measured once, places the window.
  const shown = rows[2];
  if (!state.connRow && last > first && shown.getBoundingClientRect().height > 0) {
    state.connRow = shown.getBoundingClientRect().height;
    renderConnections();
  }
}
$("connections-pane").querySelector(".scroll").addEventListener("scroll", () => requestAnimationFrame(renderConnections));

function connectionRow(c) {
  const problems = [];
  if (c.gaps) problems.push(`${c.gaps} gap${c.gaps > 1 ? "s" : ""}`);
  if (c.malformed) problems.push(`${c.malformed} malformed`);
  if (c.warnings) problems.push(`${c.warnings} warned`);
  if (c.midstream) problems.push("no SYN");
  if (c.protocol.includes("not decrypted")) problems.push("not decrypted");
  const notes = c.notes.join("\n");
  // Two lines a row, every row (the virtual list places rows by one measured height).
  return el("tr", { class: state.conn === c.index ? "sel" : "", "data-conn": c.index, title: notes, onclick: () => selectConnection(c.index) },
    el("td", {}, c.index), protocolCell(c.protocol), two(c.client, "→ " + c.server),
    el("td", {}, `${c.messages[0]} / ${c.messages[1]}`), two(fmtBytes(c.bytes[0]), fmtBytes(c.bytes[1])),
    el("td", {}, fmtMs(c.duration * 1000)),
    el("td", { class: problems.length || notes ? "problem two" : "" },
      el("div", {}, problems.join(", ")), el("div", {}, notes ? `${c.notes.length} note${c.notes.length > 1 ? "s" : ""}` : "")));
}

// A cell of two lines (client over server, c→s over s→c): the table stays narrow, nothing cut.
const two = (a, b) => el("td", { class: "two" }, el("div", {}, a), el("div", {}, b));
// "svc in TLS 1.3": the layer below on a line of its own.
const protocolCell = (p) => p.includes(" in ") ? two(p.slice(0, p.indexOf(" in ")), p.slice(p.indexOf(" in ") + 1)) : el("td", {}, p);

function selectConnection(i) {
  state.conn = i;
  for (const tr of $("connections").tBodies[0].rows) tr.classList.toggle("sel", tr.dataset.conn === (i === null ? "" : String(i)));
  state.seqFrom = 0;
  resetList();
  if (state.view === "sequence") loadSequence(true);
  if (state.view === "plots") loadPlots();
  if (state.view === "follow") loadFollow(true);
}

// ---- the message list (virtual scrolling) ----

function resetList() {
  state.pages = new Map();
  state.before = new Map();
  state.loading = new Map();
  state.total = 0;
  $("list").scrollTop = 0;
  loadPage(0).then(renderList);
}

// A page being asked for is asked once: a redraw that finds it in flight waits for the same
// answer (resolving at once, it would redraw, find it missing and ask again without end).
function loadPage(p) {
  if (state.pages.has(p)) return Promise.resolve();
  const loads = state.loading;
  if (!loads.has(p)) {
    const run = fetchPage(p).finally(() => { if (loads.get(p) === run) loads.delete(p); });
    loads.set(p, run);
  }
  return loads.get(p);
}

async function fetchPage(p) {
  const key = listKey();
  try {
    const r = await api("/api/messages", { from: p * PAGE, count: PAGE, conn: state.conn, filter: state.filter, ...sortParams() });
    if (key !== listKey()) return;  // the selection changed meanwhile
    state.total = r.total;
    keepPage(p, r);
    state.filterNote = r.note ?? null;
    showFilterError(null);
  } catch (e) {
    if (key !== listKey()) return;  // superseded: the server stopped it
    if (e.body && e.body.column) showFilterError(e.body); else throw e;
  }
}

function showFilterError(body) {
  $("filter").classList.toggle("bad", !!body);
  $("filter-error").hidden = !body;
  if (body) $("filter-error").textContent = `${body.filter}\n${" ".repeat(Math.max(0, body.column - 1))}^ ${body.error}`;
}

function renderList() {
  const list = $("list"), total = state.total;
  const scale = total * ROW > MAX_SPACER ? MAX_SPACER / (total * ROW) : 1;
  $("list-spacer").style.height = Math.ceil(total * ROW * scale) + "px";
  const first = Math.max(0, Math.floor(list.scrollTop / scale / ROW) - 5);
  const last = Math.min(total, first + Math.ceil(list.clientHeight / ROW) + 10);
  const want = new Set();
  for (let i = first; i < last; i += PAGE) want.add(Math.floor(i / PAGE));
  if (last > 0) want.add(Math.floor((last - 1) / PAGE));
  const missing = [...want].filter((p) => !state.pages.has(p));
  if (missing.length) Promise.all(missing.map(loadPage)).then(renderList);
  const rows = $("list-rows");
  // Past MAX_SPACER pixels the spacer is scaled down: rows are placed relative to the view.
  rows.style.top = (scale === 1 ? first * ROW : list.scrollTop - (list.scrollTop / scale / ROW - first) * ROW) + "px";
  const out = [];
  for (let i = first; i < last; i++) {
    const page = state.pages.get(Math.floor(i / PAGE));
    const r = page && page[i % PAGE];
    if (!r) { out.push(el("div", { class: "row" }, el("span", { class: "n" }, "…"))); continue; }
    out.push(el("div", {
      class: `row ${r.dir}${r.warn ? " warn" : ""}${r.event ? " loss " + r.event : ""}${r.n === state.selected ? " sel" : ""}`, "data-n": r.n, "data-i": i,
      onclick: () => selectMessage(r.n), style: ruleStyle(r.n),
    },
      el("span", { class: "n" }, r.n), el("span", { class: "t" }, rowTime(r, i)), el("span", { class: "d" }, r.dir === "c2s" ? "→" : "←"),
      el("span", { class: "name" }, r.name), el("span", { class: "id" }, r.id ?? ""), el("span", { class: "len" }, r.len),
      el("span", { class: "sum" }, (r.pair && r.dir === "s2c" ? `[${fmtMs(r.pair.ms)}] ` : "") + r.summary)));
  }
  rows.replaceChildren(...out);
  // With losses in the capture the list has rows of both.
  const what = state.status && state.status.rows !== state.status.messages ? ["row", "rows"] : ["message", "messages"];
  $("list-count").textContent = `${total.toLocaleString()} ${total === 1 ? what[0] : what[1]}` +
    (state.filter ? ` match ${state.filter}` : "") + (state.conn !== null ? ` on connection ${state.conn}` : "") +
    (state.filter && state.filterNote ? ` (${state.filterNote})` : "");
}

$("list").addEventListener("scroll", () => requestAnimationFrame(renderList));
$("list").addEventListener("keydown", (e) => {
  if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
  e.preventDefault();
  const rows = [...document.querySelectorAll("#list-rows .row[data-n]")];
  const at = rows.findIndex((r) => Number(r.dataset.n) === state.selected);
  const next = rows[at + (e.key === "ArrowDown" ? 1 : -1)];
  if (next) { selectMessage(Number(next.dataset.n)); next.scrollIntoView({ block: "nearest" }); }
});

// ---- one message: the tree and the bytes, linked both ways ----

async function selectMessage(n) {
  state.selected = n;
  for (const r of document.querySelectorAll("#list-rows .row")) r.classList.toggle("sel", Number(r.dataset.n) === n);
  const m = await api("/api/message", { n });
  state.message = m;
  const [p0, p1] = m.pkts;
  const carried = p0 === p1 ? `packet ${p0}` : `packets ${p0}-${p1}`;
  $("detail-summary").textContent = `#${m.n}  ${m.conn}  ${m.protocol}  ${carried}\n${m.summary}`;
  const pair = $("detail-pair");
  pair.replaceChildren();
  if (m.pair) {
    pair.append(m.dir === "c2s" ? "answered by " : "answers ",
      el("a", { onclick: () => selectMessage(m.pair.n), "data-n": m.pair.n }, `#${m.pair.n}`), ` after ${fmtMs(m.pair.ms)}`);
  }
  const tree = $("tree");
  tree.replaceChildren(...m.lines.map((l, i) => {
    if (l.note !== undefined) return el("div", { class: "note" }, l.note);
    if (l.warning !== undefined) return el("div", { class: "warning" }, "warning: " + l.warning);
    return el("div", { class: "field", "data-line": i, "data-offset": l.offset, "data-width": l.width, style: `padding-left:${l.depth * 16}px`, onclick: () => selectField(i) },
      el("span", { class: "range" }, `[${l.offset}+${l.width}]`), l.text);
  }));
  const bytes = m.fieldBytes ?? m.bytes;
  $("hex-title").textContent = m.event ? lossBytesTitle(m, bytes.length / 2) : m.fieldBytes
    ? `${bytes.length / 2} bytes after the body's transforms (the fields count in these); ${m.bytes.length / 2} bytes as captured below`
    : `${bytes.length / 2} bytes`;
  const hex = $("hex");
  hex.replaceChildren(hexDump(bytes, true));
  if (m.fieldBytes) hex.append(el("div", { class: "dim" }, "as captured:"), hexDump(m.bytes, false));
}

// A loss has no frame: a gap's bytes were never seen; a malformed stretch keeps its first 256.
function lossBytesTitle(m, n) {
  if (m.event === "gap") return `no bytes: the capture never saw these ${m.len.toLocaleString()}`;
  if (!n) return "no bytes";
  return n < m.len ? `the first ${n} of its ${m.len.toLocaleString()} bytes` : `${n} bytes`;
}

function hexDump(h, linked) {
  const box = el("div", linked ? { id: "hex-linked" } : {});
  const n = h.length / 2;
  for (let o = 0; o < n; o += 16) {
    const line = el("div", { class: "line" }, el("span", { class: "off" }, o.toString(16).padStart(8, "0") + "  "));
    let ascii = "";
    for (let i = o; i < Math.min(n, o + 16); i++) {
      const b = parseInt(h.substr(i * 2, 2), 16);
      const span = el("span", { class: "b", "data-i": i }, h.substr(i * 2, 2));
      if (linked) span.addEventListener("click", () => selectByte(i));
      line.append(span, i === o + 7 ? "  " : " ");
      ascii += b >= 32 && b < 127 ? String.fromCharCode(b) : ".";
    }
    line.append(" ".repeat((16 - Math.min(16, n - o)) * 3 + (n - o < 8 ? 1 : 0)) + " |" + ascii + "|");
    box.append(line);
  }
  return box;
}

function selectField(i) {
  const lines = state.message.lines;
  const l = lines[i];
  for (const f of document.querySelectorAll("#tree .field")) f.classList.toggle("sel", Number(f.dataset.line) === i);
  for (const b of document.querySelectorAll("#hex-linked .b")) {
    const x = Number(b.dataset.i);
    b.classList.toggle("hl", x >= l.offset && x < l.offset + l.width);
  }
  const first = document.querySelector("#hex-linked .b.hl");
  if (first) first.scrollIntoView({ block: "nearest" });
}

// A byte selects the innermost field over it (the narrowest range; the latest of equals).
function selectByte(x) {
  let best = -1;
  state.message.lines.forEach((l, i) => {
    if (l.offset === undefined || x < l.offset || x >= l.offset + l.width) return;
    if (best < 0 || l.width <= state.message.lines[best].width) best = i;
  });
  if (best >= 0) {
    selectField(best);
    document.querySelector(`#tree .field[data-line="${best}"]`).scrollIntoView({ block: "nearest" });
  }
}

// ---- sequence diagram ----

async function loadSequence(fresh) {
  const c = state.conn ?? (state.connTotal ? 0 : null);
  const box = $("sequence");
  if (c === null) { $("sequence-head").textContent = "No connection."; box.replaceChildren(); return; }
  if (fresh) { state.seqFrom = 0; box.replaceChildren(); state.seqRows = 0; }
  const s = await api("/api/sequence", { conn: c, from: state.seqFrom, count: 500 });
  $("sequence-head").textContent = `connection ${c}: ${s.client} (client) and ${s.server} (server), ${s.total} messages` +
    (state.conn === null ? " — the first connection; select another on the left" : "");
  const W = 820, L = 170, R = 650, top = 40, step = 26;
  if (state.seqFrom === 0) {
    box.append(svg("text", { x: L, y: 16, "text-anchor": "middle" }, "client " + s.client),
      svg("text", { x: R, y: 16, "text-anchor": "middle" }, "server " + s.server));
    box.t0 = s.arrows.length ? s.arrows[0].t : 0;
  }
  s.arrows.forEach((a, k) => {
    const y = top + (state.seqFrom + k) * step;
    if (a.event) {  // a loss: a dashed line across both lanes, not an arrow
      const g = svg("g", { class: `loss ${a.event}`, "data-n": a.n });
      g.append(svg("line", { x1: L, y1: y, x2: R, y2: y }),
        svg("text", { x: (L + R) / 2, y: y - 4, "text-anchor": "middle" }, `${a.name} ${a.dir} (${a.len} B)`),
        svg("text", { x: 4, y: y + 4 }, "+" + fmtMs((a.t - box.t0) * 1000)));
      g.addEventListener("click", () => { showView("messages"); selectMessage(a.n); });
      box.append(g);
      return;
    }
    const [x1, x2] = a.dir === "c2s" ? [L, R] : [R, L];
    const g = svg("g", { class: `arrow ${a.dir}`, "data-n": a.n });
    g.append(svg("line", { x1, y1: y, x2: x2 + (a.dir === "c2s" ? -6 : 6), y2: y }),
      svg("path", { d: a.dir === "c2s" ? `M${x2} ${y} l-8 -4 l0 8 z` : `M${x2} ${y} l8 -4 l0 8 z`, fill: a.dir === "c2s" ? "#335" : "#2a7a2a" }),
      svg("text", { x: (L + R) / 2, y: y - 4, "text-anchor": "middle" }, `${a.name} (${a.len} B)`),
      svg("text", { x: 4, y: y + 4 }, "+" + fmtMs((a.t - box.t0) * 1000)));
    if (a.pair && a.dir === "s2c") g.append(svg("text", { class: "latency", x: R + 12, y: y + 4 }, `↩ #${a.pair.n} ${fmtMs(a.pair.ms)}`));
    g.addEventListener("click", () => { showView("messages"); selectMessage(a.n); });
    box.append(g);
  });
  state.seqFrom += s.arrows.length;
  const rows = state.seqFrom;
  box.append(svg("line", { class: "lane", x1: L, y1: 22, x2: L, y2: top + rows * step }),
    svg("line", { class: "lane", x1: R, y1: 22, x2: R, y2: top + rows * step }));
  box.setAttribute("width", W);
  box.setAttribute("height", top + rows * step + 10);
  $("sequence-more").hidden = state.seqFrom >= s.total;
}
$("sequence-more").addEventListener("click", () => loadSequence(false));

// ---- plots ----

const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"];

async function loadPlots() {
  const p = await api("/api/plots", { conn: state.conn, buckets: 100 });
  $("rate-scope").textContent = (state.conn === null ? "all connections" : `connection ${state.conn}`) +
    (p.seconds ? `, ${p.buckets} intervals of ${fmtMs(p.seconds * 1000 / p.buckets)}` : "");
  const box = $("rate"), W = 900, H = 260, pad = 40;
  box.replaceChildren();
  const max = Math.max(1, ...p.rate.flatMap((s) => s.counts));
  box.append(svg("line", { class: "axis", x1: pad, y1: H - 20, x2: W - 10, y2: H - 20 }), svg("line", { class: "axis", x1: pad, y1: 10, x2: pad, y2: H - 20 }),
    svg("text", { x: 2, y: 16 }, String(max)), svg("text", { x: 2, y: H - 22 }, "0"),
    svg("text", { x: pad, y: H - 4 }, "0 s"), svg("text", { x: W - 60, y: H - 4 }, p.seconds ? fmtMs(p.seconds * 1000) : ""));
  const legend = $("rate-legend");
  legend.replaceChildren();
  p.rate.forEach((s, k) => {
    const pts = s.counts.map((c, i) => `${pad + (i + 0.5) * (W - pad - 10) / p.buckets},${H - 20 - c / max * (H - 40)}`).join(" ");
    box.append(svg("polyline", { points: pts, fill: "none", stroke: COLOURS[k % COLOURS.length], "stroke-width": 1.5, "data-name": s.name }));
    legend.append(el("span", {}, el("i", { style: `background:${COLOURS[k % COLOURS.length]}` }), `${s.name} (${s.counts.reduce((a, b) => a + b, 0)})`));
  });
  const lat = p.latency, hb = $("latency"), LH = 220;
  hb.replaceChildren();
  $("latency-stats").textContent = lat.count
    ? `${lat.count} pairs, min ${fmtMs(lat.min)}, median ${fmtMs(lat.p50)}, p99 ${fmtMs(lat.p99)}, max ${fmtMs(lat.max)}`
    : "no request/response pairs (a dissector says pair_by to pair them)";
  if (!lat.count) return;
  const top = Math.max(...lat.bins), bw = (W - pad - 10) / lat.bins.length;
  lat.bins.forEach((c, i) => {
    const h = c / top * (LH - 40);
    hb.append(svg("rect", { x: pad + i * bw + 1, y: LH - 20 - h, width: bw - 2, height: h, "data-count": c },));
  });
  hb.append(svg("line", { class: "axis", x1: pad, y1: LH - 20, x2: W - 10, y2: LH - 20 }),
    svg("text", { x: pad, y: LH - 4 }, fmtMs(lat.min)), svg("text", { x: W - 80, y: LH - 4 }, fmtMs(lat.max)), svg("text", { x: 2, y: 16 }, String(top)));
}

// ---- diff ----

async function loadDiff() {
  if (state.diffLoaded) return;
  const body = $("diff").tBodies[0];
  if (!state.status.diff) {
    $("diff-summary").textContent = "No second capture: start framedump ui with --diff OTHER.pcap to compare.";
    return;
  }
  $("diff-summary").textContent = "Comparing…";
  let d;
  try { d = await api("/api/diff"); } catch (e) { $("diff-summary").textContent = e.message; return; }
  state.diffLoaded = true;
  $("diff-summary").textContent = `${d.old} against ${d.new}: ${d.summary}`;
  const show = (v) => v === undefined ? "" : JSON.stringify(v);
  for (const x of d.differences) {
    const pk = (p) => p ? `pkts ${p[0]}${p[1] !== p[0] ? "-" + p[1] : ""}` : "";
    let oldCell, newCell;
    if (x.fields && x.fields.length) {
      oldCell = el("td", { class: "changed" }, pk(x.pkts_old) + "\n" + x.fields.map((f) => `${f.path} = ${show(f.old)}`).join("\n"));
      newCell = el("td", { class: "changed" }, pk(x.pkts_new) + "\n" + x.fields.map((f) => `${f.path} = ${show(f.new)}`).join("\n"));
    } else {
      oldCell = el("td", {}, x.change === "added" ? "" : pk(x.pkts_old ?? x.pkts) + (x.line ? "\n" + JSON.stringify(x.line.fields ?? x.line) : ""));
      newCell = el("td", {}, x.change === "removed" ? "" : pk(x.pkts_new ?? x.pkts) + (x.line ? "\n" + JSON.stringify(x.line.fields ?? x.line) : ""));
    }
    body.append(el("tr", { class: x.change }, el("td", {}, x.change), el("td", {}, x.conn ?? ""), el("td", {}, x.dir ?? ""),
      el("td", {}, x.message ?? ""), oldCell, newCell));
  }
}

// ---- views, filter, live ----

function showView(v) {
  state.view = v;
  for (const b of document.querySelectorAll("nav button[data-view]")) b.classList.toggle("on", b.dataset.view === v);
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== "view-" + v;
  if (v === "messages") renderList();
  if (v === "sequence") loadSequence(true);
  if (v === "plots") loadPlots();
  if (v === "diff") loadDiff();
  if (v === "follow") loadFollow(true);
}
for (const b of document.querySelectorAll("nav button[data-view]")) b.addEventListener("click", () => showView(b.dataset.view));

// A new filter replaces the list only once its first rows came: a filter the server refuses
// leaves the list it had, with the error under the box (as Wireshark keeps its packet list).
$("filter-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = $("filter").value.trim();
  state.trying = text;
  if (!text) { state.filter = ""; showFilterError(null); resetList(); return; }
  state.filtering = (state.filtering || 0) + 1;  // colouring rules wait: their filters would stop this one
  try {
    const r = await api("/api/messages", { from: 0, count: PAGE, conn: state.conn, filter: text, ...sortParams() });
    if (state.trying !== text) return;  // another filter was asked for meanwhile
    state.filter = text;
    state.filterNote = r.note ?? null;
    state.pages = new Map();
    state.before = new Map();
    keepPage(0, r);
    state.loading = new Map();
    state.total = r.total;
    $("list").scrollTop = 0;
    showFilterError(null);
    renderList();
  } catch (err) {
    if (state.trying !== text) return;
    if (err.body && err.body.column) showFilterError(err.body); else throw err;
  } finally {
    state.filtering--;
  }
});
$("filter-clear").addEventListener("click", () => { $("filter").value = ""; state.trying = ""; state.filter = ""; showFilterError(null); resetList(); });

function watchLive() {
  const ws = new WebSocket(url(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/live`));
  let lastConns = 0, connsAt = 0, trailing = null;
  ws.onmessage = async (e) => {
    const s = JSON.parse(e.data);
    await refreshStatus();
    // The last page may have grown: ask again for it (and the rows after it).
    const lastPage = Math.floor(Math.max(0, state.total - 1) / PAGE);
    if (sortParams().sort) state.pages.clear();  // sorted, new messages land anywhere in the list
    for (const p of [...state.pages.keys()]) if (p >= lastPage) state.pages.delete(p);
    await loadPage(lastPage);
    // Connections' counts change with every message: at most once a second, and once more
    // after the last change.
    if (s.connections !== lastConns || Date.now() - connsAt > 1000) {
      lastConns = s.connections; connsAt = Date.now(); refreshConnections();
    }
    clearTimeout(trailing);
    trailing = setTimeout(refreshConnections, 1100);
    renderList();
    if ($("tail").checked && state.view === "messages") $("list").scrollTop = $("list").scrollHeight;
  };
  ws.onclose = () => setTimeout(() => refreshStatus(), 500);
}

// ---- what the page remembers in the browser (nothing when storage is refused) ----

function recall(key) {
  try { return localStorage.getItem(key); } catch { return null; }
}
function remember(key, value) {
  try { localStorage.setItem(key, value); } catch { /* not kept: the page works as it is */ }
}

// ---- sorting, time formats, column widths ----

const listKey = () => `${state.conn}|${state.filter}|${state.sort}|${state.desc}`;
const sortParams = () => state.sort === "n" && !state.desc ? {} : { sort: state.sort, desc: state.desc ? 1 : 0 };

// A page's rows, and what its time column counts from (the row before it, the first message).
function keepPage(p, r) {
  state.pages.set(p, r.rows);
  state.before.set(p, r.before);
  state.first = r.first;
  fitColumns(r.rows);
  colourRows(r.rows);
}

// A click on a header sorts by its column (the server sorts: the list is paged); again, the other way.
function sortBy(column) {
  if (state.sort === column) state.desc = !state.desc; else { state.sort = column; state.desc = false; }
  for (const h of document.querySelectorAll("#list-head span[data-sort]")) {
    h.classList.toggle("sorted", h.dataset.sort === state.sort);
    h.classList.toggle("desc", h.dataset.sort === state.sort && state.desc);
  }
  resetList();
}
for (const h of document.querySelectorAll("#list-head span[data-sort]")) h.addEventListener("click", () => sortBy(h.dataset.sort));

const pad = (x, n = 2) => String(x).padStart(n, "0");
// Seconds with six decimals, from an exact count of microseconds (no float drift in the digits).
function fmtSeconds(d) {
  const us = Math.round(d * 1e6), sign = us < 0 ? "-" : "", a = Math.abs(us);
  return `${sign}${Math.floor(a / 1e6)}.${pad(a % 1e6, 6)}`;
}
function fmtAbsolute(t) {
  const us = Math.round(t * 1e6), s = Math.floor(us / 1e6), d = new Date(s * 1000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(us - s * 1e6, 6)}`;
}

// The time cell of row i: as tcpdump -tttt (absolute), -ttttt (since the first message) or -ttt
// (since the row shown above it; the first row: 0).
function rowTime(r, i) {
  if (state.timeFormat === "relative") return fmtSeconds(state.first === null ? 0 : r.t - state.first);
  if (state.timeFormat === "delta") {
    const above = previousTime(i);
    return fmtSeconds(above === null ? 0 : r.t - above);
  }
  return fmtAbsolute(r.t);
}

function previousTime(i) {
  if (i === 0) return null;
  const p = Math.floor(i / PAGE);
  if (i % PAGE === 0) return state.before.get(p) ?? null;
  const page = state.pages.get(p);
  return page && page[i % PAGE - 1] ? page[i % PAGE - 1].t : null;
}

function setTimeFormat(f) {
  state.timeFormat = ["absolute", "relative", "delta"].includes(f) ? f : "absolute";
  $("time-format").value = state.timeFormat;
  remember("framedump.time", state.timeFormat);
  widths.t = state.timeFormat === "absolute" ? 26 : 10;
  applyWidths();
  renderList();
}
$("time-format").addEventListener("change", (e) => setTimeFormat(e.target.value));

// Column widths, in characters, as wide as the widest value the list has shown (they only grow,
// so the columns do not jump while scrolling).
const widths = { n: 3, t: 26, name: 7, id: 2, len: 5 };
function fitColumns(rows) {
  for (const r of rows) {
    widths.n = Math.max(widths.n, String(r.n).length);
    widths.name = Math.max(widths.name, Math.min(40, r.name.length));
    widths.id = Math.max(widths.id, Math.min(24, String(r.id ?? "").length));
    widths.len = Math.max(widths.len, String(r.len).length);
  }
  applyWidths();
}
function applyWidths() {
  const v = $("view-messages").style;
  for (const [k, w] of Object.entries(widths)) v.setProperty(`--w-${k}`, `${w + (k === "n" || k === "id" || k === "len" ? 1 : 0)}ch`);
}

// ---- layout: resizable panes, the connections' toggle, keyboard ----

// A drag on a handle sets a pane's size in pixels (kept in the browser).
function dragHandle(handle, key, apply) {
  handle.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    handle.setPointerCapture(e.pointerId);
    handle.classList.add("dragging");
    const move = (m) => apply(m);
    const up = () => {
      handle.classList.remove("dragging");
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", up);
      remember(key, String(layout[key]));
    };
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
  });
}

const layout = {};
function setConnectionsWidth(px) {
  layout["framedump.connw"] = Math.round(Math.max(120, Math.min(px, window.innerWidth - 300)));
  $("connections-pane").style.width = layout["framedump.connw"] + "px";
}
function setDetailHeight(px) {
  const view = $("view-messages").clientHeight;
  layout["framedump.detailh"] = Math.round(Math.max(60, Math.min(px, view - 100)));
  $("detail").style.height = layout["framedump.detailh"] + "px";
  renderList();
}
dragHandle($("connections-split"), "framedump.connw", (m) => setConnectionsWidth(m.clientX - $("connections-pane").getBoundingClientRect().left));
dragHandle($("detail-split"), "framedump.detailh", (m) => setDetailHeight($("detail").getBoundingClientRect().bottom - m.clientY));

// The connections' default width is their table's (capped at 40% of the window: the list keeps
// the rest); the detail's default height 30% of the view (the list takes most of it).
function defaultLayout() {
  const saved = Number(recall("framedump.connw"));
  fitConnections();
  if (saved) setConnectionsWidth(saved);
  // The table widens as connections and their problems come (and a TLS layer is named): the
  // pane follows it until the user drags its edge.
  new ResizeObserver(fitConnections).observe($("connections"));
  const h = Number(recall("framedump.detailh"));
  if (h) setDetailHeight(h); else $("detail").style.height = "30%";
}

function fitConnections() {
  if (recall("framedump.connw")) return;
  setConnectionsWidth(Math.min($("connections").scrollWidth + 14, window.innerWidth * 0.4));
}

function toggleConnections(show) {
  const pane = $("connections-pane");
  const shown = show ?? pane.classList.contains("collapsed");
  pane.classList.toggle("collapsed", !shown);
  $("connections-toggle").classList.toggle("off", !shown);
  remember("framedump.connections", shown ? "shown" : "hidden");
  renderList();
}
$("connections-toggle").addEventListener("click", () => toggleConnections());

// `/` goes to the filter box, Escape leaves it; Enter on the list opens the selected message's
// fields (arrows move the selection: the list's own handler).
document.addEventListener("keydown", (e) => {
  const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
  if (e.key === "/" && !typing) { e.preventDefault(); $("filter").focus(); $("filter").select(); }
});
$("filter").addEventListener("keydown", (e) => {
  if (e.key === "Escape") { $("filter").blur(); $("list").focus(); }
});
$("list").addEventListener("keydown", (e) => {
  if (e.key !== "Enter" || state.selected === null) return;
  e.preventDefault();
  openDetail(state.selected);
});
async function openDetail(n) {
  if (!state.message || state.message.n !== n) await selectMessage(n);
  $("tree-pane").focus();
}

// ---- colouring rules (Wireshark's): a filter and a colour; the first rule a row matches colours it ----

const COLOUR = /^#[0-9a-fA-F]{6}$/;
// The server keeps eight filters' answers: six rules and the filter box's stay answered.
const MAX_RULES = 6;
function loadRules() {
  let saved = [];
  try { saved = JSON.parse(recall("framedump.rules") || "[]"); } catch { saved = []; }
  state.rules = (Array.isArray(saved) ? saved : []).filter((r) => r && typeof r.filter === "string" && COLOUR.test(r.colour))
    .slice(0, MAX_RULES).map((r) => ({ filter: r.filter.slice(0, 1000), colour: r.colour, error: "" }));
  drawRules();
}
function saveRules() {
  remember("framedump.rules", JSON.stringify(state.rules.map((r) => ({ filter: r.filter, colour: r.colour }))));
}

function drawRules() {
  $("rules-live").hidden = !(state.status && state.status.live);
  $("rules").replaceChildren(...state.rules.map((r, k) => {
    const text = el("input", { type: "text", value: r.filter, placeholder: "filter, e.g. game.Res == 1", spellcheck: "false", "data-rule": k });
    const colour = el("input", { type: "color", value: r.colour, "data-rule-colour": k });
    text.addEventListener("change", () => { r.filter = text.value.trim(); rulesChanged(); });
    colour.addEventListener("change", () => { if (COLOUR.test(colour.value)) { r.colour = colour.value; rulesChanged(); } });
    return el("div", { class: "rule" }, colour, text,
      el("button", { type: "button", onclick: () => { state.rules.splice(k, 1); rulesChanged(); } }, "remove"),
      el("span", { class: "error" }, r.error));
  }));
}

function rulesChanged() {
  for (const r of state.rules) r.error = "";
  saveRules();
  drawRules();
  state.colours = new Map();
  for (const page of state.pages.values()) colourRows(page);
}
$("rule-add").addEventListener("click", () => {
  if (state.rules.length >= MAX_RULES) return;
  state.rules.push({ filter: "", colour: "#ffd7a8", error: "" });
  drawRules();
  $("rules").lastChild.querySelector("input[type=text]").focus();
});
$("rules-toggle").addEventListener("click", () => { $("rules-panel").hidden = !$("rules-panel").hidden; });

const ruleStyle = (n) => state.colours.has(n) ? `background:${state.colours.get(n)}` : "";

// Asks the server which of these rows each rule's filter selects (as the filter box is answered:
// decoded again, then kept), one rule after another, and colours each row by the first it matches.
// Live captures have one filter evaluated as messages come (the filter box's): rules wait for a file.
const colouring = { queue: Promise.resolve() };
function colourRows(rows) {
  const rules = state.rules.filter((r) => r.filter);
  if (!rules.length || !rows.length || (state.status && state.status.live)) return;
  const ns = rows.map((r) => r.n);
  colouring.queue = colouring.queue.then(async () => {
    const hit = new Map();
    for (const rule of rules) {
      const m = await ruleMatches(rule, ns);
      for (const n of m) if (!hit.has(n)) hit.set(n, rule.colour);
    }
    for (const n of ns) if (hit.has(n)) state.colours.set(n, hit.get(n)); else state.colours.delete(n);
    state.coloured = (state.coloured || 0) + 1;
    renderList();
  });
}

async function ruleMatches(rule, ns) {
  for (let attempt = 0; attempt < 5; attempt++) {
    // One filter decodes at a time and a newer one stops it: the filter box's goes first.
    for (let wait = 0; state.filtering && wait < 600; wait++) await new Promise((r) => setTimeout(r, 100));
    try {
      return (await api("/api/matches", { filter: rule.filter, n: ns.join(",") })).matches;
    } catch (e) {
      if (e.status !== 409) { rule.error = e.message; drawRules(); return []; }
      await new Promise((r) => setTimeout(r, 300));  // the filter box's filter was decoding
    }
  }
  rule.error = "not answered (other filters kept the server busy)";
  drawRules();
  return [];
}

// ---- follow stream: a connection's messages' bytes in order, each message's start marked ----

async function loadFollow(fresh) {
  const c = state.conn ?? (state.connTotal ? 0 : null);
  const box = $("follow");
  if (c === null) { $("follow-head").textContent = "No connection."; box.replaceChildren(); return; }
  if (fresh) { state.followFrom = 0; box.replaceChildren(); }
  const f = await api("/api/follow", { conn: c, from: state.followFrom });
  $("follow-head").textContent = `connection ${c}: ${f.client} (client) and ${f.server} (server), ${f.total} rows` +
    (f.gaps + f.malformed ? ` — ${f.gaps} gap(s), ${f.malformed} malformed stretch(es), marked where they happened` : "") +
    (state.conn === null ? " — the first connection; select another on the left" : "");
  const hex = document.querySelector("input[name=follow-mode][value=hex]").checked;
  for (const m of f.messages) box.append(followMessage(m, hex));
  state.followFrom = f.next ?? f.total;
  $("follow-more").hidden = f.next === null;
}
$("follow-more").addEventListener("click", () => loadFollow(false));
for (const r of document.querySelectorAll("input[name=follow-mode]")) r.addEventListener("change", () => loadFollow(true));

function followMessage(m, hex) {
  if (m.event) return followLoss(m);
  const mark = el("span", { class: "mark", "data-n": m.n, title: "open this message" },
    `#${m.n} ${m.dir === "c2s" ? "→" : "←"} ${m.name} (${m.len} B)`);
  mark.addEventListener("click", () => { showView("messages"); selectMessage(m.n); });
  const bytes = el("div", { class: m.dir }, hex ? followHex(m.bytes) : followText(m.bytes));
  const parts = [el("div", {}, mark), bytes];
  if (m.cut) parts.push(el("span", { class: "missing" }, `… ${m.len - m.bytes.length / 2} more bytes of this message not shown`));
  return el("div", { class: "follow-message", "data-n": m.n }, ...parts);
}
// A loss (bytes in no message): a marker where it happened, which opens its row.
function followLoss(m) {
  const mark = el("span", { class: "missing", "data-n": m.n, title: "open this row" },
    `#${m.n} ${m.name} ${m.dir === "c2s" ? "→" : "←"} ${m.len} bytes: ${m.summary}`);
  mark.addEventListener("click", () => { showView("messages"); selectMessage(m.n); });
  return el("div", { class: "follow-loss", "data-n": m.n }, mark);
}

// Printable ASCII and line ends as they are, any other byte as "." (as Wireshark's ASCII view).
function followText(h) {
  let out = "";
  for (let i = 0; i < h.length; i += 2) {
    const b = parseInt(h.substr(i, 2), 16);
    out += b === 10 || b === 13 || b === 9 || (b >= 32 && b < 127) ? String.fromCharCode(b) : ".";
  }
  return out;
}
function followHex(h) {
  const lines = [];
  for (let o = 0; o < h.length / 2; o += 16) {
    const chunk = h.substr(o * 2, 32);
    lines.push(o.toString(16).padStart(8, "0") + "  " + chunk.replace(/(..)/g, "$1 ").trim());
  }
  return lines.join("\n");
}

function startLayout() {
  setTimeFormat(recall("framedump.time") || "absolute");
  loadRules();
  defaultLayout();
  if (recall("framedump.connections") === "hidden") toggleConnections(false);
}

async function start() {
  let s = await refreshStatus();
  // A file: wait (briefly) for the first rows, then keep the counts fresh until it is read.
  await refreshConnections();
  startLayout();
  resetList();
  if (s.live) watchLive();
  while (s.state === "indexing") {
    await new Promise((r) => setTimeout(r, 300));
    s = await refreshStatus();
    state.pages.delete(Math.floor(Math.max(0, state.total - 1) / PAGE));
    if (!state.filter) { const r = await api("/api/messages", { from: 0, count: 0, conn: state.conn }); state.total = r.total; }
    renderList();
    await refreshConnections();  // (the pages in view only)
  }
  await refreshConnections();
  if (!state.filter) resetList();
  state.ready = true;
}
start();
