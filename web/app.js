/**
 * The canvas: one WebSocket to the bridge, which passes each message to the
 * daemon's socket as one line and each line back as one message. The page
 * speaks the socket protocol itself (README, "Protocol"): it keeps no state
 * of its own beyond what the events say, so a second tab, or one opened
 * mid-reply, shows the same thing.
 */
import { CanvasModel, isStored } from "./model.js";
import { CanvasView } from "./view.js";
import { warmUp } from "./markdown.js";

const $ = (id) => document.getElementById(id);

const SEARCH_DELAY_MS = 120;
const SEARCH_LIMIT = 50;
const LIST_LIMIT = 200;
const RETRY_MS = [500, 1000, 2000, 5000];
/** Rest after a draw, as a multiple of the draw's time, layout and paint included. */
const DRAW_REST = 2;

const model = new CanvasModel();
const view = new CanvasView();

/** Figures the tests and the benchmark read; nothing the page relies on. */
const stats = {
  events: 0,
  tokens: 0,
  lastTokenAt: 0,
  frames: 0,
  drawMs: 0,
  maxDrawMs: 0,
  sentAt: {},
};
globalThis.daCanvas = { model, stats };

// --- the connection -------------------------------------------------------

const token = location.pathname.split("/")[1] ?? "";
const socketUrl = `ws://${location.host}/${token}/ws`;
let ws = null;
let attempt = 0;
let refs = 0;
// Every client sees every turn's refs: a random part keeps this tab's own.
const TAB = Array.from(
  crypto.getRandomValues(new Uint8Array(4)),
  (byte) => byte.toString(16).padStart(2, "0"),
).join("");
let askedPrivate = false;

function connect() {
  view.connection("connecting…", "warn");
  const socket = new WebSocket(socketUrl);
  ws = socket;
  socket.addEventListener("open", () => {
    attempt = 0;
    view.connection("connected", "up");
  });
  // A message holds one or more whole lines, as one read of the socket
  // brought them.
  socket.addEventListener("message", (event) => {
    for (const line of String(event.data).split("\n")) {
      if (line !== "") onLine(line);
    }
  });
  socket.addEventListener("close", (event) => {
    if (ws !== socket) return;
    ws = null;
    const wait = RETRY_MS[Math.min(attempt++, RETRY_MS.length - 1)];
    const why = event.reason ||
      (event.code === 1006
        ? "the canvas does not answer (stopped, or restarted with a new address)"
        : `closed (${event.code})`);
    view.connection(`disconnected: ${why}; retrying`, "down");
    setTimeout(connect, wait);
  });
}

/** Sends one command with a fresh `ref` and returns the ref; null when not connected. */
function send(command) {
  if (!ws || ws.readyState !== WebSocket.OPEN) {
    view.notice(
      "Not connected to the daemon: the command was not sent.",
      "error",
    );
    return null;
  }
  const ref = `web-${TAB}-${++refs}`;
  stats.sentAt[command.type] = performance.now();
  ws.send(JSON.stringify({ ...command, ref }));
  return ref;
}

// --- events ---------------------------------------------------------------

let queued = new Set();
let scheduled = false;
let settling = false;
let lastDrawEnd = 0;
let lastDrawTook = 0;

function onLine(text) {
  let event;
  try {
    event = JSON.parse(text);
  } catch {
    view.notice(
      "The daemon sent a line that is not JSON; it was skipped.",
      "error",
    );
    return;
  }
  if (!event || typeof event !== "object" || typeof event.type !== "string") {
    return;
  }
  stats.events++;
  if (event.type === "token") {
    stats.tokens++;
    stats.lastTokenAt = performance.now();
  }
  const changed = model.apply(event);
  for (const part of changed) queued.add(part);
  afterEvent(event);
  schedule();
}

function afterEvent(event) {
  switch (event.type) {
    case "hello":
      send({ type: "list", limit: LIST_LIMIT });
      break;
    case "done":
      if (!event.stopped) send({ type: "list", limit: LIST_LIMIT });
      break;
    case "conversation":
      if (askedPrivate) {
        askedPrivate = false;
        if (event.private !== true) {
          view.notice(
            "This daemon has no private conversations yet: this one will be saved.",
            "error",
          );
        }
      }
      break;
    case "export":
      download(event);
      break;
  }
}

/**
 * Draws what changed, at most once per frame, and leaves the page most of
 * its time to read. A draw's cost is its script plus the layout and paint
 * the browser does after it, so it is timed until the frame is over; the
 * next draw then rests twice that long. A fast stream coalesces into fewer,
 * larger draws instead of falling behind. A hidden tab gets no frames: a
 * timer stands in for them.
 */
function schedule() {
  if (scheduled || settling) return;
  scheduled = true;
  const run = () => {
    if (!scheduled) return;
    scheduled = false;
    drawNow();
  };
  const rest = lastDrawEnd + Math.min(lastDrawTook * DRAW_REST, 300) -
    performance.now();
  setTimeout(() => {
    requestAnimationFrame(run);
    setTimeout(run, 250);
  }, Math.max(0, rest));
}

function drawNow() {
  const changed = queued;
  queued = new Set();
  const started = performance.now();
  view.draw(model, changed);
  if (
    focusFirst && changed.has("list") && model.resultsFor === search.value
  ) {
    focusFirst = false;
    focusFirstResult();
  }
  for (const notice of model.takeNotices()) {
    view.notice(notice.text, notice.kind);
  }
  const took = performance.now() - started;
  stats.frames++;
  stats.drawMs += took;
  stats.maxDrawMs = Math.max(stats.maxDrawMs, took);
  settling = true;
  const settle = () => {
    if (!settling) return;
    settling = false;
    lastDrawEnd = performance.now();
    lastDrawTook = lastDrawEnd - started;
    if (queued.size > 0) schedule();
  };
  // After the next frame's callbacks come its layout and paint; a task
  // queued from there runs once they are done.
  requestAnimationFrame(() => setTimeout(settle, 0));
  setTimeout(settle, 250);
}

function download(event) {
  const json = event.format === "json";
  const blob = new Blob([String(event.text ?? "")], {
    type: json ? "application/json" : "text/markdown",
  });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = `conversation-${event.id}.${json ? "json" : "md"}`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

// --- commands -------------------------------------------------------------

const input = $("input");
let editing = false;

function setEditing(on) {
  editing = on;
  $("editing").hidden = !on;
  $("send").textContent = on ? "Save & ask" : "Send";
}

function submit() {
  const text = input.value;
  if (text.trim() === "") return;
  if (send(editing ? { type: "edit", text } : { type: "ask", text }) !== null) {
    input.value = "";
    setEditing(false);
  }
}

function stop() {
  send({ type: "stop" });
}

function editLast() {
  const last = model.current.turns.at(-1);
  if (!last) return;
  input.value = last.user;
  // A stopped or failed question was never kept: it is asked anew.
  setEditing(isStored(last));
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
}

function retry() {
  send({ type: "retry" });
}

function startRename() {
  if (model.current.id === null) return;
  const field = $("title-edit");
  field.value = model.title;
  field.hidden = false;
  $("title").hidden = true;
  field.focus();
  field.select();
}

function endRename(save) {
  const field = $("title-edit");
  if (field.hidden) return;
  const title = field.value.trim();
  field.hidden = true;
  $("title").hidden = false;
  if (save && title !== "" && model.current.id !== null) {
    send({ type: "rename", id: model.current.id, title });
  }
  input.focus();
}

function removeCurrent() {
  const id = model.current.id;
  if (id === null) return;
  if (!confirm(`Delete “${model.title}”? This cannot be undone.`)) return;
  send({ type: "delete", id });
}

function answerConfirm(call, allow) {
  send({ type: "approve", call, allow });
}

function firstConfirm() {
  return model.confirms.values().next().value ?? null;
}

// --- search ---------------------------------------------------------------

const search = $("search");
let searchTimer = 0;

/** Enter was pressed in the search field before its results came. */
let focusFirst = false;

function focusFirstResult() {
  $("list").querySelector("button.conv")?.focus();
}

function runSearch() {
  clearTimeout(searchTimer);
  const q = search.value;
  if (q.trim() === "") {
    model.clearSearch();
    view.drawList(model);
    return;
  }
  // This query's results are shown or on their way (Enter after typing).
  if (q === model.query && model.searching(q)) return;
  const ref = send({ type: "search", q, limit: SEARCH_LIMIT });
  if (ref !== null) model.searchSent(ref, q);
}

search.addEventListener("input", () => {
  clearTimeout(searchTimer);
  // Emptied: the conversations come back at once, and no answer on its
  // way brings results back.
  if (search.value.trim() === "") runSearch();
  else searchTimer = setTimeout(runSearch, SEARCH_DELAY_MS);
});

search.addEventListener("keydown", (event) => {
  if (event.key === "Enter") {
    event.preventDefault();
    runSearch();
    if (search.value.trim() === "" || model.resultsFor === search.value) {
      focusFirstResult();
    } else {
      focusFirst = true;
    }
  } else if (event.key === "ArrowDown") {
    event.preventDefault();
    $("list").querySelector("button.conv")?.focus();
  } else if (event.key === "Escape" && search.value !== "") {
    event.preventDefault();
    event.stopPropagation();
    search.value = "";
    runSearch();
  }
});

// --- clicks ---------------------------------------------------------------

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  submit();
});
$("stop").addEventListener("click", stop);
$("stop-elsewhere").addEventListener("click", stop);
$("new").addEventListener("click", () => send({ type: "new" }));
$("private").addEventListener("click", () => {
  if (send({ type: "new", private: true }) !== null) askedPrivate = true;
});
$("rename").addEventListener("click", startRename);
$("title").addEventListener("dblclick", startRename);
$("export-md").addEventListener(
  "click",
  () => send({ type: "export", id: model.current.id, format: "markdown" }),
);
$("export-json").addEventListener(
  "click",
  () => send({ type: "export", id: model.current.id, format: "json" }),
);
$("delete").addEventListener("click", removeCurrent);
$("editing-cancel").addEventListener("click", () => setEditing(false));

$("title-edit").addEventListener("keydown", (event) => {
  if (event.key === "Enter") {
    event.preventDefault();
    endRename(true);
  } else if (event.key === "Escape") {
    event.preventDefault();
    event.stopPropagation();
    endRename(false);
  }
});
$("title-edit").addEventListener("blur", () => endRename(false));

$("list").addEventListener("click", (event) => {
  const button = event.target.closest("button.conv");
  if (!button) return;
  send({ type: "open", id: Number(button.dataset.id) });
});

$("list").addEventListener("keydown", (event) => {
  const buttons = [...$("list").querySelectorAll("button.conv")];
  const at = buttons.indexOf(document.activeElement);
  if (at === -1) return;
  if (event.key === "ArrowDown") {
    event.preventDefault();
    buttons[Math.min(at + 1, buttons.length - 1)].focus();
  } else if (event.key === "ArrowUp") {
    event.preventDefault();
    if (at === 0) search.focus();
    else buttons[at - 1].focus();
  }
});

$("log").addEventListener("click", (event) => {
  if (event.target.closest("button.retry")) retry();
  else if (event.target.closest("button.edit")) editLast();
  else if (event.target.closest("button.again")) {
    const last = model.current.turns.at(-1);
    if (last) send({ type: "ask", text: last.user });
  }
});

$("confirms").addEventListener("click", (event) => {
  const button = event.target.closest("button");
  const row = event.target.closest(".confirm");
  if (!button || !row) return;
  const item = model.confirms.get(row.dataset.call) ??
    [...model.confirms.values()].find((c) =>
      String(c.call) === row.dataset.call
    );
  if (item) answerConfirm(item.call, button.classList.contains("allow"));
});

// --- keys -----------------------------------------------------------------

input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submit();
  } else if (event.key === "ArrowUp" && input.value === "") {
    event.preventDefault();
    editLast();
  }
});

document.addEventListener("keydown", (event) => {
  const typing = event.target instanceof HTMLInputElement ||
    event.target instanceof HTMLTextAreaElement;
  if (event.key === "Escape") {
    if (model.busy) {
      event.preventDefault();
      stop();
    } else if (editing) {
      event.preventDefault();
      setEditing(false);
      input.value = "";
    }
    return;
  }
  if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k") {
    event.preventDefault();
    search.focus();
    search.select();
    return;
  }
  if (event.key === "/" && !typing) {
    event.preventDefault();
    search.focus();
    return;
  }
  if (event.key === "F2") {
    event.preventDefault();
    startRename();
    return;
  }
  if (!event.altKey || event.ctrlKey || event.metaKey) return;
  const waiting = firstConfirm();
  switch (event.code) {
    case "KeyN":
      event.preventDefault();
      send({ type: "new" });
      input.focus();
      break;
    case "KeyP":
      event.preventDefault();
      if (send({ type: "new", private: true }) !== null) askedPrivate = true;
      input.focus();
      break;
    case "KeyR":
      event.preventDefault();
      retry();
      break;
    case "KeyA":
      if (waiting) {
        event.preventDefault();
        answerConfirm(waiting.call, true);
      }
      break;
    case "KeyD":
      if (waiting) {
        event.preventDefault();
        answerConfirm(waiting.call, false);
      }
      break;
  }
});

document.addEventListener("visibilitychange", () => {
  if (!document.hidden && scheduled && !settling) {
    scheduled = false;
    drawNow();
  }
});

view.draw(model, new Set(["turns", "pending", "status", "list", "confirms"]));
connect();
input.focus();
setTimeout(warmUp, 0);
