// @ts-check
/// <reference lib="dom" />
/**
 * The canvas: the page speaks the daemon's socket protocol itself
 * (docs/protocol.md) over one WebSocket to the bridge. It keeps no state of
 * its own beyond what the events say, so a second tab, or one opened
 * mid-reply, shows the same thing. This module wires the parts: the
 * connection (connection.js), the model (model.js), the drawing (view.js,
 * when draw_schedule.js says) and the controls (controls.js).
 */
import { Connection } from "./connection.js";
import { bindControls } from "./controls.js";
import { DrawSchedule } from "./draw_schedule.js";
import { warmUp } from "./markdown.js";
import { CanvasModel } from "./model.js";
import { CanvasView } from "./view.js";

/** @typedef {import("./model.js").WireEvent} WireEvent */

const LIST_LIMIT = 200;

const model = new CanvasModel();
const view = new CanvasView();

const token = location.pathname.split("/")[1] ?? "";
const connection = new Connection({
  url: `ws://${location.host}/${token}/ws`,
  onLine,
  onLink: (link) => {
    if (link.state === "down") controls.linkLost();
    schedule.add(model.linked(link));
  },
});

/** Figures the tests and the benchmark read; nothing the page relies on. */
const stats = {
  events: 0,
  tokens: 0,
  lastTokenAt: 0,
  frames: 0,
  drawMs: 0,
  maxDrawMs: 0,
  sentAt: connection.sentAt,
};
Object.assign(globalThis, { daCanvas: { model, stats } });

/** Parts drawn; then the notices the model holds. */
const schedule = new DrawSchedule((changed) => {
  view.draw(model, changed);
  controls.drawn(changed);
  for (const notice of model.takeNotices()) {
    view.notice(notice.text, notice.kind);
  }
}, stats);

/**
 * Sends one command; says so when the daemon is not connected.
 * @param {import("./connection.js").Command} command
 */
function send(command) {
  const ref = connection.send(command);
  if (ref === null) {
    view.notice(
      "Not connected to the daemon: the command was not sent.",
      "error",
    );
  }
  return ref;
}

/** One line from the daemon. */
function onLine(/** @type {string} */ text) {
  /** @type {unknown} */
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
  if (
    !event || typeof event !== "object" ||
    typeof (/** @type {{type?: unknown}} */ (event).type) !== "string"
  ) {
    return;
  }
  const wire = /** @type {WireEvent} */ (event);
  stats.events++;
  if (wire.type === "token") {
    stats.tokens++;
    stats.lastTokenAt = performance.now();
  }
  schedule.add(model.apply(wire));
  afterEvent(wire);
}

/** What an event asks of the page beyond drawing it. */
function afterEvent(/** @type {WireEvent} */ event) {
  switch (event.type) {
    case "hello":
      send({ type: "list", limit: LIST_LIMIT });
      break;
    case "done":
      if (!event.stopped) send({ type: "list", limit: LIST_LIMIT });
      break;
    case "conversation":
      controls.conversationShown(event);
      break;
    case "user":
    case "error":
      controls.answered(event);
      break;
    case "export":
      download(event);
      break;
  }
}

/** An `export` answer, saved as a file. */
function download(
  /** @type {import("./model_parts.js").EventOf<"export">} */ event,
) {
  const json = event.format === "json";
  const blob = new Blob([String(event.text ?? "")], {
    type: json ? "application/json" : "text/markdown",
  });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  // Without an id it is the memories (`export_memories`).
  const name = event.id === undefined ? "memories" : `conversation-${event.id}`;
  link.download = `${name}.${json ? "json" : "md"}`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

const controls = bindControls({ model, view, send });

// A saved turn's picture, fetched when it comes into sight; a page not
// connected asks again once greeted, when the turns are drawn anew.
/** @type {import("./file_view.js").Thumbs["want"]} */
const wantPicture = (conversation, turn, index, file) => {
  const command = model.files.pictures.want(conversation, turn, index, file);
  if (!command) return;
  const ref = connection.send(command);
  if (ref !== null) model.files.pictures.asked(ref, command);
};
view.thumbs.want = wantPicture;

view.draw(
  model,
  new Set(
    /** @type {const} */ (["turns", "pending", "status", "list", "confirms"]),
  ),
);
connection.connect();
controls.focusInput();
setTimeout(warmUp, 0);
