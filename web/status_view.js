// @ts-check
/// <reference lib="dom" />
/**
 * The header: the title, the link to the daemon, llama-server and its
 * model, the state, the context meter of the conversation shown, the
 * microphone; and the composer's buttons that follow the state.
 */
import { $, el, numbers } from "./dom.js";
import { shortModelName } from "./model_parts.js";

/** @typedef {import("./model.js").CanvasModel} CanvasModel */

/** @type {Record<string, string>} */
const STATES = {
  idle: "idle",
  thinking: "thinking…",
  tool: "running a tool",
  confirm: "waiting for your approval",
};

/** @type {Record<string, [string, string]>} */
const BACKEND = {
  unknown: ["backend: checking…", "unknown"],
  up: ["llama-server up", "up"],
  loading: ["llama-server loading its model…", "warn"],
  no_model: ["no model loaded", "warn"],
  down: ["llama-server down", "down"],
};

const ASK = "Ask anything · Enter sends, Shift+Enter new line";

/** What the state pill says: "answering…" once the reply's text flows. */
function stateText(/** @type {CanvasModel} */ model) {
  if (model.state === "tool" && model.tool) return `running ${model.tool}`;
  if (model.state === "thinking" && model.pending?.reply) return "answering…";
  return STATES[model.state] ?? model.state;
}

/** The link to the daemon, in the header. */
function drawLink(/** @type {CanvasModel} */ model) {
  const node = $("connection");
  const { link } = model;
  if (link.state === "up") {
    node.textContent = "connected";
    node.dataset.tone = "up";
  } else if (link.state === "down") {
    node.textContent = `disconnected: ${link.why}; retrying`;
    node.dataset.tone = "down";
  } else {
    node.textContent = "connecting…";
    node.dataset.tone = "warn";
  }
}

/**
 * llama-server's pill and the model's short name (its full name in the
 * tooltip); returns what degrades asking, or null.
 * @param {CanvasModel} model
 * @returns {string | null}
 */
function drawBackend(model) {
  const backend = $("backend");
  const info = model.backend;
  backend.hidden = info === null;
  let degraded = null;
  const full = info?.model ?? model.model ?? "";
  const short = full === "" ? "" : shortModelName(full);
  if (info) {
    const [label, tone] = BACKEND[info.state] ?? [String(info.state), "warn"];
    let text = label;
    if (info.state === "up" && short) text = `${short} · ready`;
    if (info.message) text += `: ${info.message}`;
    backend.textContent = text;
    backend.dataset.tone = tone;
    backend.dataset.state = info.state;
    backend.title = [
      info.state === "up" ? full : "",
      info.url ? `llama-server at ${info.url}` : "",
    ].filter((line) => line !== "").join("\n");
    if (info.state !== "up" && info.state !== "unknown") degraded = text;
  }
  const name = $("model");
  name.textContent = short;
  name.title = full;
  name.hidden = short === "" || info?.state === "up";
  return degraded;
}

/** The meter of the conversation shown; hidden while it has no figure. */
function drawCtx(/** @type {CanvasModel} */ model) {
  const ctx = model.ctx;
  const wrap = $("ctx");
  wrap.hidden = ctx.used === null || ctx.max === null;
  if (ctx.used === null || ctx.max === null) return;
  const meter = /** @type {HTMLMeterElement} */ ($("ctx-meter"));
  meter.max = ctx.max;
  meter.value = Math.min(ctx.used, ctx.max);
  meter.high = ctx.max * 0.8;
  meter.optimum = 0;
  const main = `context ${numbers.format(ctx.used)} / ${
    numbers.format(ctx.max)
  }`;
  let more = "";
  if (ctx.sent !== null && ctx.total !== null && ctx.sent < ctx.total) {
    more += ` · ${ctx.sent} of ${ctx.total} earlier turns sent`;
  }
  if (ctx.summarized !== null && ctx.summarized > 0) {
    more += ` · ${ctx.summarized} summarised`;
  }
  const text = $("ctx-text");
  text.replaceChildren(main, el("span", "ctx-more", more));
  wrap.title =
    `${main}${more}: tokens in the model's context after the last reply`;
}

/** The microphone: whether the voice client listens, and whether it can. */
function drawListen(/** @type {CanvasModel} */ model) {
  const mic = /** @type {HTMLButtonElement} */ ($("listen"));
  const on = model.listening === true;
  mic.setAttribute("aria-pressed", String(on));
  mic.disabled = !model.canListen || !model.greeted;
  $("listen-text").textContent = on ? "Listening" : "Listen";
  mic.title = !model.canListen
    ? "This daemon cannot listen: update it to use the microphone"
    : on
    ? "Listening: the voice client records and asks (click to stop)"
    : "Listen: the voice client records your question and asks it";
}

/** Header, state, backend, context meter and the composer's buttons. */
export function drawStatus(/** @type {CanvasModel} */ model) {
  document.title = `${model.title} · desktop-assistant`;
  $("title").textContent = model.title;
  $("private-badge").hidden = !model.current.private;
  const saved = model.current.id !== null;
  for (const id of ["rename", "export-md", "export-json", "delete"]) {
    /** @type {HTMLButtonElement} */ ($(id)).disabled = !saved;
  }
  drawLink(model);
  const state = $("state");
  state.textContent = stateText(model);
  state.dataset.state = model.state;
  const degraded = drawBackend(model);
  drawCtx(model);
  drawListen(model);
  $("stop").hidden = !model.busy;
  $("composer").classList.toggle("degraded", degraded !== null);
  /** @type {HTMLTextAreaElement} */ ($("input")).placeholder = degraded
    ? `${degraded}. Asking still tries.`
    : ASK;
}
