// AgentGym run viewer: asks the JSON API for one page of episodes at a time and for one
// episode when it is opened. All text from the run goes through textContent (never HTML).
"use strict";

const PAGE = 50;
const state = { file: null, offset: 0, filter: "all", sort: "index", q: "", ep: null, total: 0 };
const $ = (sel) => document.querySelector(sel);
let listTicket = 0;
let episodeTicket = 0;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

async function api(path, params = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== "") url.searchParams.set(k, v);
  const res = await fetch(url);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

const pct = (x) => (x == null ? "–" : (100 * x).toFixed(0) + "%");
const num = (x, d = 2) => (x == null ? "–" : Number(x).toFixed(d));

function saveHash() {
  const p = new URLSearchParams();
  if (state.file) p.set("file", state.file);
  if (state.offset) p.set("offset", state.offset);
  if (state.filter !== "all") p.set("filter", state.filter);
  if (state.sort !== "index") p.set("sort", state.sort);
  if (state.q) p.set("q", state.q);
  if (state.ep !== null) p.set("ep", state.ep);
  history.replaceState(null, "", "#" + p.toString());
}

function loadHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  state.file = p.get("file");
  state.offset = Number(p.get("offset") || 0);
  state.filter = p.get("filter") || "all";
  state.sort = p.get("sort") || "index";
  state.q = p.get("q") || "";
  state.ep = p.has("ep") ? Number(p.get("ep")) : null;
}

async function loadRun() {
  const run = await api("/api/run");
  document.title = `${run.name} · AgentGym`;
  $("#run-name").textContent = run.name;
  $("#run-path").textContent = run.path;
  $("#config-text").textContent = run.config || "(no config.yaml)";
  if (run.eval_table) {
    const [headers, rows] = run.eval_table;
    $("#eval-table").replaceChildren(
      el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { text: h })))),
      el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((c) => el("td", { text: c }))))));
    $("#run-eval").hidden = false;
  }
  const list = $("#steps");
  list.replaceChildren();
  for (const f of run.files) {
    const meta = [];
    if (f.episodes != null) meta.push(`${f.episodes} ep`);
    if (f.success_rate != null) meta.push(`${pct(f.success_rate)} ok`);
    if (f.horizon != null) meta.push(`horizon ${f.horizon}`);
    list.append(el("li", { "data-file": f.key, onclick: () => selectFile(f.key) }, f.label, el("small", { text: meta.join(" · ") })));
  }
  if (!run.files.length) list.append(el("li", { class: "muted", text: "no trajectories yet" }));
  if (!state.file && run.files.length) state.file = run.files[run.files.length - 1].key;
}

function selectFile(key) {
  state.file = key; state.offset = 0; state.ep = null;
  loadEpisodes();
  $("#episode").replaceChildren(el("p", { class: "muted", text: "Pick an episode." }));
}

async function loadEpisodes() {
  saveHash();
  for (const li of document.querySelectorAll("#steps li")) li.classList.toggle("active", li.dataset.file === state.file);
  if (!state.file) return;
  const body = $("#episodes tbody");
  const ticket = ++listTicket;  // answers to older requests (fast typing) are dropped
  const want = { file: state.file, offset: state.offset, limit: PAGE, filter: state.filter, sort: state.sort, q: state.q };
  let page;
  try {
    page = await api("/api/episodes", want);
  } catch (err) {
    if (ticket === listTicket) body.replaceChildren(el("tr", {}, el("td", { class: "error", colSpan: 6, text: err.message })));
    return;
  }
  if (ticket !== listTicket) return;
  state.total = page.total;
  body.replaceChildren();
  // What the rows show, for tests and for anyone inspecting the page.
  Object.assign(body.dataset, { file: want.file, filter: want.filter, sort: want.sort, q: want.q, offset: want.offset });
  for (const e of page.items) {
    const tr = el("tr", { "data-index": e.index, onclick: () => openEpisode(e.index) },
      el("td", { text: e.index + 1 }),
      el("td", { text: e.task_id }),
      el("td", { text: num(e.reward) }),
      el("td", { class: e.success ? "ok" : "fail", text: e.success ? "✓" : "✗" }),
      el("td", { text: e.failed ? "env failure" : e.end_reason }),
      el("td", { text: `${e.turns}/${e.max_turns}` }));
    tr.classList.toggle("active", e.index === state.ep);
    body.append(tr);
  }
  const shown = page.total ? `${page.offset + 1}–${page.offset + page.items.length}` : "0";
  $("#count").textContent = `${shown} of ${page.total} episodes` + (page.total !== page.all ? ` (${page.all} in step)` : "");
  $("#page").textContent = `page ${Math.floor(page.offset / PAGE) + 1} of ${Math.max(1, Math.ceil(page.total / PAGE))}`;
  $("#prev").disabled = page.offset === 0;
  $("#next").disabled = page.offset + PAGE >= page.total;
}

function tokens(list, fallbackText, mask) {
  const box = el("div", { class: "tokens" });
  if (list) {
    for (const [piece, m] of list) box.append(el("span", { class: `tok m${m}`, text: piece.replace(/\n/g, "↵\n") }));
  } else if (fallbackText) {
    box.append(el("span", { class: `seg m${mask}`, text: fallbackText }));
  }
  return box;
}

function field(label, value, cls) {
  return el("span", { class: cls || "" }, el("b", { text: label + " " }), String(value));
}

// The model judge's verdict (info["judge"] of the last turn): what it concluded and its raw answer.
function judgeBlock(j) {
  let outcome;
  if (j.gated) outcome = "not judged: the env's state check failed (reward 0)";
  else if (j.skipped) outcome = `not judged: ${j.skipped} (reward 0)`;
  else if (j.parsed === false) outcome = `parse failure: ${j.error || "no verdict"} (reward ${num(j.reward)})`;
  else outcome = `score ${j.score} → reward ${num(j.reward)}`;
  const head = el("div", { class: "turn-head" },
    el("span", { class: "title", text: `Judge (${j.rubric || "?"})` }),
    el("span", { class: j.parsed === false ? "error" : "", text: outcome }),
    el("span", { class: "muted", text: `${j.model || ""}${j.mode && j.mode !== "absolute" ? ", " + j.mode : ""}${j.cached ? ", cached" : ""}` }));
  const box = el("div", { class: "judge" }, head);
  if (j.reason) box.append(el("p", { class: "reason", text: j.reason }));
  if (j.raw != null) box.append(el("div", { class: "muted", text: "the judge's answer, as it came:" }), el("pre", { class: "raw", text: j.raw }));
  const s = j.screen;
  if (s) {
    // Judged as played and as screened (what cannot earn a score taken out); the lower reward stands.
    const side = (name, v) => `${name}: score ${v.score ?? "x"} → reward ${num(v.reward)}`;
    box.append(el("div", { class: "muted", text: `screened (${s.kept === "screened" ? "the screened copy's lower reward stands" : "the reward as played stands"}): ${side("as played", s.as_played || {})}; ${side("screened", s.screened || {})}` }),
      el("pre", { class: "raw", text: "taken out: " + (s.removed || []).join("\n           ") }));
  }
  return box;
}

async function openEpisode(index) {
  state.ep = index;
  saveHash();
  for (const tr of document.querySelectorAll("#episodes tbody tr")) tr.classList.toggle("active", Number(tr.dataset.index) === index);
  const pane = $("#episode");
  const ticket = ++episodeTicket;
  let ep;
  try {
    ep = await api("/api/episode", { file: state.file, index });
  } catch (err) {
    if (ticket === episodeTicket) pane.replaceChildren(el("p", { class: "error", text: err.message }));
    return;
  }
  if (ticket !== episodeTicket) return;
  const head = el("div", { class: "summary" },
    field("episode", ep.episode_id),
    field("task", ep.task_id),
    field("result", ep.success ? "success" : "failure", ep.success ? "ok" : "fail"),
    field("reward", num(ep.reward)),
    field("score", num(ep.score)),
    field("end", ep.end_reason),
    field("turns", ep.num_turns),
    field("horizon", ep.max_turns),
    field("tokens", `${ep.tokens} (${ep.generated} generated)`));
  const legend = el("div", { class: "legend" },
    el("span", {}, el("span", { class: "swatch m1" }), "model tokens (loss mask 1)"),
    el("span", {}, el("span", { class: "swatch m0" }), "prompt / environment tokens (mask 0)"));
  const parts = [el("h2", { text: `Episode ${ep.index + 1} of ${ep.count}` }), head];
  if (ep.judge) parts.push(judgeBlock(ep.judge));
  parts.push(legend);
  if (ep.failed) parts.push(el("p", { class: "warn", text: `env failure: ${ep.error || "unknown"} (zero-weighted in training)` }));
  if (!ep.decoded) parts.push(el("p", { class: "warn", text: "No tokenizer.json found in the run's checkpoints or model folder: showing stored texts, not token pieces." }));
  // The prompt (system instruction + first observation) is often long: folded unless short.
  const prompt = el("details", { class: "prompt", open: ep.prompt_len <= 80 },
    el("summary", { class: "turn-head" }, el("span", { class: "title", text: "Prompt" }), el("span", { text: `${ep.prompt_len} tokens` }),
      el("span", { class: "muted", text: "(click to show / hide)" })),
    tokens(ep.prompt_tokens, ep.decoded ? "" : "(prompt text is not stored; token ids only)", 0));
  parts.push(prompt);
  for (const t of ep.turns) {
    const meta = el("div", { class: "turn-head" },
      el("span", { class: "title", text: `Turn ${t.turn} / ${ep.max_turns}` }),
      el("span", { text: `reward ${num(t.reward)}` }),
      el("span", { text: `env reward ${num(t.env_reward)}` }),
      el("span", { text: `action: ${t.action == null ? "(unparsed)" : t.action}` }),
      t.parse_error ? el("span", { class: "error", text: `parse error: ${t.parse_error}` }) : null,
      t.finish_reason === "length" ? el("span", { class: "error", text: "reply cut at max_new_tokens" }) : null,
      t.done ? el("span", { text: "done" }) : null,
      t.version != null ? el("span", { class: "muted", text: `sampled by weights v${t.version}` }) : null,
      el("span", { class: "muted", text: `${t.model_token_count} model + ${t.env_token_count} env tokens` }),
      t.context && t.context !== "the whole episode" ? el("span", { class: "muted", text: `saw: ${t.context}` }) : null);
    parts.push(el("div", { class: "turn", "data-turn": t.turn }, meta,
      tokens(t.model_tokens, t.text, 1),
      t.env_token_count || !ep.decoded ? tokens(t.env_tokens, t.observation, 0)
        : el("div", { class: "final-obs" }, el("span", { class: "muted", text: "final observation (not in the token sequence): " }), t.observation || "–")));
  }
  pane.replaceChildren(...parts);
  pane.scrollTop = 0;
}

function wire() {
  $("#filter").onchange = (e) => { state.filter = e.target.value; state.offset = 0; loadEpisodes(); };
  $("#sort").onchange = (e) => { state.sort = e.target.value; state.offset = 0; loadEpisodes(); };
  let timer = null;
  $("#search").oninput = (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.q = e.target.value.trim(); state.offset = 0; loadEpisodes(); }, 250);
  };
  $("#prev").onclick = () => { state.offset = Math.max(0, state.offset - PAGE); loadEpisodes(); };
  $("#next").onclick = () => { state.offset += PAGE; loadEpisodes(); };
}

async function main() {
  loadHash();
  wire();
  $("#filter").value = state.filter;
  $("#sort").value = state.sort;
  $("#search").value = state.q;
  try {
    await loadRun();
  } catch (err) {
    $("#episode").replaceChildren(el("p", { class: "error", text: `cannot load the run: ${err.message}` }));
    return;
  }
  await loadEpisodes();
  if (state.ep !== null) await openEpisode(state.ep);
}

main();
