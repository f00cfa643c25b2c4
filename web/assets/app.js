// The page of a Sausage host: the agent's chat, the plugin graph, the
// process tree and the journal's tail. It talks only to the host that
// served it; every request that changes state carries x-sausage-session.
import { markdownRenderer, plainText } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const HEADERS = { "content-type": "application/json", "x-sausage-session": "1" };
const MAX_LOG_ROWS = 500;

/** Markdown to HTML: marked, as in the console, once its module is here; plain text before. */
let renderMarkdown = plainText;
const markedLoaded = import("./marked.js").then(
  ({ Marked }) => renderMarkdown = markdownRenderer(Marked),
  () => {}, // a host that cannot serve it: the text as written
);

/** JSON of a GET, or an Error with the server's reason. */
async function getJson(path) {
  const response = await fetch(path);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error ?? `${path}: ${response.status}`);
  return body;
}

async function postJson(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.error ?? `${path}: ${response.status}`);
  return answer;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// ---- the chat ----

const chat = {
  session: "default",
  /** The turn in flight: its AbortController. */
  turn: null,
  /** The reply being streamed (deltas), replaced by the next step. */
  pending: null,
  /** The last tool call drawn, for its result to fold under. */
  lastCall: null,
};

function scrollChat() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
}

function dropPending() {
  chat.pending?.remove();
  chat.pending = null;
}

/** Draws one step as the peer protocol says: errors, tool results under their call, calls, replies. */
function drawStep(step) {
  const box = $("messages");
  const blocks = step.blocks ?? [];
  const tools = step.tools ?? [];
  if (step.role === "error" || blocks.includes("error") && step.role !== "tool") {
    box.append(el("div", "msg error", step.text));
  } else if (blocks.includes("toolResponse")) {
    const result = el("div", "result");
    const mark = el(
      "span",
      step.ok === false ? "bad" : "ok",
      step.ok === false ? "failed " : "ok ",
    );
    result.append(mark, document.createTextNode(step.text ?? ""));
    if (chat.lastCall) {
      chat.lastCall.append(result);
      const summary = chat.lastCall.querySelector("summary");
      summary.append(
        el("span", step.ok === false ? "bad" : "ok", step.ok === false ? " … failed" : " … ok"),
      );
    } else box.append(result);
    chat.lastCall = null;
  } else if (step.role === "assistant" && tools.length && !step.text) {
    const call = el("details", "msg tool");
    call.append(el("summary", "", `${tools.join(", ")} ${step.args ?? ""}`.trimEnd()));
    box.append(call);
    chat.lastCall = call;
  } else if (step.role === "assistant") {
    const reply = el("div", "msg reply");
    reply.innerHTML = renderMarkdown(step.text ?? "");
    box.append(reply);
    if (typeof step.input_tokens === "number") {
      box.append(el(
        "div",
        "usage",
        `${step.input_tokens} tokens in, ${step.output_tokens} out` +
          (typeof step.ms === "number" ? `, ${(step.ms / 1000).toFixed(1)} s` : ""),
      ));
    }
  } else if (step.role === "notice") {
    box.append(el("div", "msg notice", step.text));
  } else {
    box.append(el("div", "msg user", step.text));
  }
  scrollChat();
}

async function loadHistory() {
  const box = $("messages");
  box.replaceChildren();
  chat.lastCall = null;
  try {
    const { steps } = await getJson(`/history?session=${encodeURIComponent(chat.session)}`);
    if (!steps.length) box.append(el("div", "empty", "No messages yet in this session."));
    for (const step of steps) drawStep(step);
  } catch (e) {
    box.append(el("div", "msg error", `The history cannot be read: ${e.message}`));
  }
}

async function loadSessions() {
  const select = $("session");
  let names = ["default"];
  try {
    const { sessions } = await getJson("/sessions");
    names = [...new Set(["default", ...sessions.map((s) => s.session)])];
  } catch { /* no agent: the default session only */ }
  if (!names.includes(chat.session)) names.push(chat.session);
  select.replaceChildren(...names.map((n) => {
    const option = el("option", "", n);
    option.value = n;
    option.selected = n === chat.session;
    return option;
  }));
}

function setBusy(busy) {
  $("send").hidden = busy;
  $("stop").hidden = !busy;
  $("session").disabled = busy;
  $("new-session").disabled = busy;
}

/** Sends the person's message and draws the NDJSON turn as it streams. */
async function send(text) {
  const box = $("messages");
  box.querySelector(".empty")?.remove();
  box.append(el("div", "msg user", text));
  scrollChat();
  const turn = new AbortController();
  chat.turn = turn;
  setBusy(true);
  try {
    const response = await fetch("/task", {
      method: "POST",
      headers: HEADERS,
      body: JSON.stringify({ task: text, session: chat.session }),
      signal: turn.signal,
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.error ?? `the turn failed: ${response.status}`);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let rest = "";
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += value;
      let nl;
      while ((nl = rest.indexOf("\n")) >= 0) {
        const line = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          continue; // not JSON: ignored, as the protocol says
        }
        onLine(message);
      }
    }
  } catch (e) {
    // what streamed before a Stop stays: the agent journals it with the cancelled turn
    if (turn.signal.aborted && chat.pending) chat.pending.classList.remove("pending");
    else dropPending();
    chat.pending = null;
    if (turn.signal.aborted) box.append(el("div", "msg error", "Stopped: the turn was cancelled."));
    else box.append(el("div", "msg error", e.message));
    scrollChat();
  } finally {
    chat.turn = null;
    setBusy(false);
    loadSessions();
  }
}

function onLine(message) {
  if (message.type === "delta") {
    if (!chat.pending) {
      chat.pending = el("div", "msg reply pending", "");
      $("messages").append(chat.pending);
    }
    chat.pending.textContent += message.text;
    scrollChat();
  } else if (message.type === "step") {
    dropPending();
    drawStep(message);
  } else if (message.type === "done") {
    dropPending();
    if (typeof message.input_tokens === "number") {
      const model = message.model?.resolved ? ` · ${message.model.resolved}` : "";
      $("messages").append(
        el(
          "div",
          "usage",
          `${message.input_tokens} tokens in, ${message.output_tokens} out${model}`,
        ),
      );
    }
    scrollChat();
  } else if (message.type === "failed") {
    dropPending();
    const error = el("div", "msg error", message.error);
    // the console's hint: where the file to edit is on this machine
    if (message.hint) error.append(el("div", "hint", `hint: ${message.hint}`));
    $("messages").append(error);
    scrollChat();
  }
}

$("ask").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("text").value.trim();
  if (!text || chat.turn) return;
  $("text").value = "";
  send(text);
});
$("text").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("ask").requestSubmit();
  }
});
// Stop drops the connection; the host stops the turn and the agent journals it as cancelled
$("stop").addEventListener("click", () => chat.turn?.abort());
$("session").addEventListener("change", () => {
  chat.session = $("session").value;
  loadHistory();
});
$("new-session").addEventListener("click", () => {
  const stamp = new Date().toISOString().slice(5, 19).replace(/[-:T]/g, "");
  chat.session = `web-${stamp}`;
  loadSessions();
  loadHistory();
  $("text").focus();
});

// ---- the graph and the plugin panel ----

let knownPlugins = null;

async function loadGraph() {
  let graph;
  try {
    graph = await getJson("/graph");
  } catch (e) {
    $("graph").replaceChildren(el("div", "msg error", `The graph cannot be drawn: ${e.message}`));
    return;
  }
  const names = Object.keys(graph.plugins);
  const fresh = knownPlugins ? names.filter((n) => !knownPlugins.includes(n)) : [];
  knownPlugins = names;
  $("graph").innerHTML = graph.svg;
  for (const node of $("graph").querySelectorAll("g.node")) {
    const name = node.querySelector("title")?.textContent ?? "";
    node.dataset.plugin = name;
    if (fresh.includes(name)) node.classList.add("fresh");
    const status = graph.plugins[name];
    const broken = Object.values(status?.imports ?? {}).some((i) => i.status && i.status !== "ok");
    if (broken) node.classList.add("broken");
    node.addEventListener("click", () => showPlugin(name));
  }
}

/** A block of Markdown from a plugin's document. */
function doc(text) {
  const block = el("div", "doc");
  block.innerHTML = renderMarkdown(text);
  return block;
}

function closePlugin() {
  $("plugin").hidden = true;
  document.querySelector("main").classList.remove("plugin-open");
}

async function showPlugin(name) {
  const panel = $("plugin");
  panel.hidden = false;
  // the docs and the call forms take the room the graph does not need
  document.querySelector("main").classList.add("plugin-open");
  const close = el("button", "close", "×");
  close.type = "button";
  close.title = "close the plugin's panel";
  close.addEventListener("click", closePlugin);
  panel.replaceChildren(el("h3", "", name), el("div", "dim", "reading its rpc.discover document…"));
  let discovered;
  try {
    discovered = await getJson(`/plugin?name=${encodeURIComponent(name)}`);
  } catch (e) {
    panel.replaceChildren(close, el("h3", "", name), el("div", "bad", e.message));
    return;
  }
  const title = el("h3", "", discovered.info?.title ?? name);
  const version = discovered.info?.version
    ? el("span", "dim", ` ${discovered.info.version}`)
    : null;
  if (version) title.append(version);
  const parts = [close, title];
  if (discovered.info?.description) parts.push(doc(discovered.info.description));
  for (const method of discovered.methods ?? []) {
    const item = el("div", "method");
    const params = (method.params ?? []).map((p) => p.required ? p.name : `${p.name}?`).join(", ");
    const form = el("form");
    const input = el("input");
    input.value = "{}";
    input.setAttribute("aria-label", `params of ${name}.${method.name}`);
    const go = el("button", "", "Call");
    go.type = "submit";
    const out = el("pre", "out");
    out.hidden = true;
    form.append(input, go);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      out.hidden = false;
      out.textContent = "…";
      try {
        const answer = await postJson("/call", {
          method: `${name}.${method.name}`,
          params: JSON.parse(input.value || "{}"),
        });
        out.className = answer.ok ? "out" : "out bad";
        out.textContent = JSON.stringify(answer.ok ? answer.result : answer.error, null, 2);
      } catch (e) {
        out.className = "out bad";
        out.textContent = e.message;
      }
    });
    // the call form sits under the method's name, before its docs, however long they are
    item.append(
      el("code", "", `${name}.${method.name}`),
      el("span", "dim", ` {${params}}`),
      form,
      out,
    );
    const words = [method.summary, method.description].filter((w, i, all) =>
      w && all.indexOf(w) === i
    );
    if (words.length) item.append(doc(words.join("\n\n")));
    const described = (method.params ?? []).filter((p) => p.description);
    if (described.length) {
      item.append(doc(described.map((p) => `- \`${p.name}\`: ${p.description}`).join("\n")));
    }
    parts.push(item);
  }
  if (!(discovered.methods ?? []).length) parts.push(el("div", "empty", "No methods."));
  panel.replaceChildren(...parts);
  panel.scrollTop = 0;
}

// ---- the processes ----

/** `notes-01a2…c3f2`: the plugin and the end of the ID, which differs between processes. */
function shortPid(pid) {
  return pid.length > 14 ? `…${pid.slice(-6)}` : pid;
}

function age(started) {
  const s = Math.max(0, (Date.now() - Date.parse(started)) / 1000);
  if (s < 60) return `${Math.floor(s)} s`;
  return s < 3600 ? `${Math.floor(s / 60)} min` : `${Math.floor(s / 3600)} h`;
}

/** An age that ticks: the process list comes only when it changes. */
function ageSpan(started) {
  const span = el("span", "age", age(started));
  span.dataset.started = started;
  return span;
}

setInterval(() => {
  for (const span of document.querySelectorAll("#tree .age")) {
    span.textContent = age(span.dataset.started);
  }
}, 1000);

function drawProcesses(list) {
  const byPid = new Map(list.map((p) => [p.pid, p]));
  const children = new Map();
  const roots = [];
  for (const p of list) {
    const parent = !p.detached && byPid.has(p.parent) ? p.parent : null;
    if (parent) (children.get(parent) ?? children.set(parent, []).get(parent)).push(p);
    else roots.push(p);
  }
  const item = (p) => {
    const li = el("li");
    li.dataset.pid = p.pid;
    const row = el("div", `proc state-${p.state}`);
    row.title = p.pid;
    row.append(
      el("span", "pid", shortPid(p.pid)),
      el("span", "", `${p.plugin}.${p.method}`),
      el("span", "dim", `${p.state} · `),
      ageSpan(p.started),
      el("span", "dim", `${p.detached ? " · detached" : ""} · ${p.parent}`),
    );
    const stop = el("button", "", "Stop");
    stop.type = "button";
    stop.title = `core.stop ${p.pid}`;
    stop.addEventListener("click", () => postJson("/stop", { pid: p.pid }).catch(() => {}));
    row.append(stop);
    li.append(row);
    const kids = children.get(p.pid);
    if (kids) {
      const ul = el("ul");
      ul.append(...kids.map(item));
      li.append(ul);
    }
    return li;
  };
  $("tree").replaceChildren(...roots.map(item));
  if (!list.length) $("tree").append(el("li", "empty", "No process runs."));
  $("proc-count").textContent = `${list.length} running`;
}

// ---- the journal ----

const filters = { plugin: "", pid: "", grep: "" };
let grepRe = null;

function matches(entry) {
  if (filters.plugin && entry.plugin !== filters.plugin) return false;
  if (filters.pid && !(entry.pid ?? "").startsWith(filters.pid)) return false;
  return !grepRe || grepRe.test(entry.line);
}

function entryRow(entry) {
  const row = el("div", `entry ${entry.stream === "core" ? "core" : ""}`);
  row.append(
    el("span", "time", entry.time.slice(11, 23)),
    el("span", "who", entry.plugin ? `${entry.plugin} ${shortPid(entry.pid ?? "")}` : "core"),
    document.createTextNode(entry.line),
  );
  return row;
}

function addEntries(entries) {
  const log = $("log");
  const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
  log.querySelector(".empty")?.remove();
  log.append(...entries.map(entryRow));
  while (log.childElementCount > MAX_LOG_ROWS) log.firstElementChild.remove();
  $("log-count").textContent = `${log.childElementCount} shown`;
  if (atEnd) log.scrollTop = log.scrollHeight;
}

async function loadLog() {
  const params = new URLSearchParams({ limit: "200" });
  for (const [k, v] of Object.entries(filters)) if (v) params.set(k, v);
  const log = $("log");
  try {
    const { entries } = await getJson(`/log?${params}`);
    log.replaceChildren();
    if (!entries.length) log.append(el("div", "empty", "No entries match."));
    else addEntries(entries);
    log.scrollTop = log.scrollHeight;
  } catch (e) {
    log.replaceChildren(el("div", "bad", e.message));
  }
}

let filterTimer;
for (const name of ["plugin", "pid", "grep"]) {
  $(`f-${name}`).addEventListener("input", () => {
    filters[name] = $(`f-${name}`).value.trim();
    try {
      grepRe = filters.grep ? new RegExp(filters.grep) : null;
    } catch {
      grepRe = null;
    }
    clearTimeout(filterTimer);
    filterTimer = setTimeout(loadLog, 200);
  });
}

// ---- the live feed ----

function connect() {
  const events = new EventSource("/events");
  events.addEventListener("open", () => {
    $("live").textContent = "live";
    $("live").classList.remove("off");
  });
  events.addEventListener("error", () => {
    $("live").textContent = "reconnecting…";
    $("live").classList.add("off");
  });
  events.addEventListener("processes", (e) => drawProcesses(JSON.parse(e.data)));
  events.addEventListener("entry", (e) => {
    const entry = JSON.parse(e.data);
    if (matches(entry)) addEntries([entry]);
  });
  events.addEventListener("gap", (e) => {
    addEntries([{
      time: new Date().toISOString(),
      plugin: null,
      stream: "core",
      line: `(${e.data} entries left out: the page fell behind)`,
    }]);
  });
  events.addEventListener("graph", () => loadGraph());
}

async function start() {
  try {
    const info = await getJson("/info");
    $("world").textContent = info.world;
    document.title = `Sausage · ${info.world.split("/").pop()}`;
  } catch (e) {
    $("world").textContent = e.message;
  }
  connect();
  await markedLoaded;
  await Promise.all([loadSessions(), loadHistory(), loadGraph(), loadLog()]);
  document.body.dataset.ready = "true";
}

start();
