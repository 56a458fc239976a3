// @ts-check
/**
 * The page's picture of the daemon, built only from the socket protocol's
 * events applied in order (docs/protocol.md). No DOM here: the view draws
 * what this holds, and a test can feed it events.
 *
 * Every field an older daemon does not send is simply absent here too:
 * `backend`, `ctx.sent`/`ctx.total`, `private`, `replaces`, `truncated`,
 * `confirm`/`approved`, `renamed`, `export`, `timings`, `summary`,
 * `listening` and a question's `files` are shown once they arrive.
 */
import {
  backendOf,
  confirmOf,
  helloConfirm,
  isStored,
  newPending,
  storedTurn,
  summaryOf,
} from "./model_parts.js";
import {
  approvedMark,
  failedTurn,
  finishedTurn,
  helloPending,
  markTool,
  placeTurn,
} from "./model_turns.js";
import { CtxMeters } from "./ctx_meters.js";
import { TurnFiles } from "./files_model.js";
import { MemoryModel } from "./memory_model.js";
import { refusal } from "./refusals.js";
import { SidebarModel } from "./sidebar_model.js";

export { isStored };

/** @typedef {import("./model_parts.js").WireEvent} WireEvent */
/** @typedef {import("./model_parts.js").EventOf<"hello">} Hello */
/** @typedef {import("./model_parts.js").EventOf<"done">} Done */
/** @typedef {import("./model_parts.js").EventOf<"error">} ErrorEvent */
/** @typedef {import("./model_parts.js").Turn} Turn */
/** @typedef {import("./model_parts.js").Pending} Pending */
/** @typedef {import("./model_parts.js").Shown} Shown */
/** @typedef {import("./model_parts.js").Ctx} Ctx */
/** @typedef {import("./model_parts.js").Backend} Backend */
/** @typedef {import("./model_parts.js").Confirm} Confirm */
/** @typedef {import("./model_parts.js").Notice} Notice */
/**
 * The parts of the page an event can change (`files`: a picture fetched;
 * `memories`: their list or how many the conversation shown carries).
 * @typedef {"turns" | "pending" | "status" | "list" | "confirms" | "notices"
 *   | "files" | "memories" | "proposals"} Part
 */
/**
 * The page's link to the daemon: `down` with the close code the bridge
 * gave (4001: no daemon answers on its socket).
 * @typedef {{state: "connecting" | "up" | "down", code: number | null,
 *   why: string}} Link
 */

/** The close code the bridge ends a page's socket with when no daemon answers. */
export const NO_DAEMON = 4001;

/** The daemon's state as the page knows it; `apply` returns what changed. */
export class CanvasModel extends SidebarModel {
  /** Whether a `hello` arrived on this connection. */
  greeted = false;
  /** @type {Link} */
  link = { state: "connecting", code: null, why: "" };
  /** `idle`, `thinking`, `tool` or `confirm`. */
  state = "idle";
  /** @type {string | null} */
  tool = null;
  /** @type {string | null} */
  model = null;
  /** @type {Backend | null} `{state, url, model, ctx_max, message}` once the daemon sends it. */
  backend = null;
  /** @type {Shown} */
  current = {
    key: "new:0",
    id: null,
    private: false,
    turns: [],
    summary: null,
  };
  /** @type {Pending | null} The reply in flight, in whichever conversation it started. */
  pending = null;
  /** @type {Map<string, Confirm>} Tool calls waiting for approval, by call id. */
  confirms = new Map();
  /** @type {boolean | null} Whether the voice client listens; null while the daemon has not said. */
  listening = null;
  /** Whether the daemon takes `listen`: false once it answered one `unknown_command`. */
  canListen = true;
  /** @type {Set<string | number>} `listen` commands sent and not yet answered. */
  listens = new Set();
  /** @type {Notice[]} Messages for the user, oldest first; the view takes them. */
  notices = [];
  /** What this page sent with its questions, and the pictures it fetched. */
  files = new TurnFiles();
  /** The memories, how many the conversation shown carries, the facts proposed. */
  memory = new MemoryModel();
  #meters = new CtxMeters();
  #fresh = 0;

  /** Whether a reply is streaming (anywhere). */
  get busy() {
    return this.pending !== null || this.state !== "idle";
  }

  /** The reply in flight when it belongs to the conversation shown. */
  get shownPending() {
    return this.pending && this.pending.key === this.current.key
      ? this.pending
      : null;
  }

  /**
   * The meter of the conversation shown: its own last figures, never those
   * another conversation left.
   * @returns {Ctx}
   */
  get ctx() {
    return this.#meters.of(this.current.key);
  }

  /** The title of the conversation shown. */
  get title() {
    const { id } = this.current;
    if (this.current.private) return "Private conversation";
    if (id === null) return "New conversation";
    return this.titleOf(id);
  }

  /** @param {number | null} id */
  #key(id) {
    return id === null ? `new:${++this.#fresh}` : `id:${id}`;
  }

  /** @param {string} text @param {"info" | "error"} kind */
  #notice(text, kind = "info") {
    this.notices.push({ text, kind });
  }

  /** @param {Hello | import("./model_parts.js").EventOf<"conversation">} event */
  #setCurrent(event) {
    const id = typeof event.id === "number" ? event.id : null;
    this.current = {
      key: this.#key(id),
      id,
      private: event.private === true,
      turns: Array.isArray(event.turns) ? event.turns.map(storedTurn) : [],
      summary: summaryOf(event.summary),
    };
  }

  #ensurePending() {
    this.pending ??= newPending(this.current.key, this.current.id, "", false);
    return this.pending;
  }

  /** A `listen` sent with `ref`: an error answering it is its. */
  listenSent(/** @type {string | number} */ ref) {
    this.listens.add(ref);
  }

  /**
   * The page's socket changed state; down ends what this connection knew
   * of the daemon until the next `hello`.
   * @param {Link} link
   * @returns {Set<Part>}
   */
  linked(link) {
    this.link = link;
    if (link.state !== "up") this.greeted = false;
    return new Set(["status", "list", "turns"]);
  }

  /**
   * Applies one event; returns the parts that changed.
   * @param {WireEvent} event
   * @returns {Set<Part>}
   */
  apply(event) {
    /** @type {Set<Part>} */
    const changed = new Set();
    switch (event.type) {
      case "hello":
        this.#hello(event);
        for (const part of /** @type {const} */ (["turns", "pending"])) {
          changed.add(part);
        }
        changed.add("status").add("confirms").add("list");
        break;
      case "state":
        this.state = String(event.state);
        this.tool = event.tool ?? null;
        if (this.state === "idle" && this.confirms.size > 0) {
          this.confirms.clear();
          changed.add("confirms");
        }
        // Idle comes after a reply's end: one still held never gets its own.
        if (this.state === "idle" && this.pending) {
          this.pending = null;
          changed.add("pending");
        }
        changed.add("status");
        break;
      case "user":
        // A turn starts in the daemon's current conversation: the one shown.
        this.pending = newPending(
          this.current.key,
          this.current.id,
          String(event.text ?? ""),
          event.replaces === true,
        );
        this.files.started(this.pending, event);
        changed.add("pending").add("status");
        break;
      case "think":
        this.#ensurePending().think += event.delta ?? "";
        changed.add("pending");
        break;
      case "token": {
        const pending = this.#ensurePending();
        const first = pending.reply === "";
        pending.reply += event.delta ?? "";
        changed.add("pending");
        // The state pill says the answer has begun.
        if (first) changed.add("status");
        break;
      }
      case "tool":
        markTool(this.#ensurePending().tools, event);
        changed.add("pending");
        break;
      case "confirm":
        this.confirms.set(event.call, confirmOf(event));
        changed.add("confirms");
        break;
      case "approved": {
        const asked = this.confirms.get(event.call);
        this.confirms.delete(event.call);
        if (this.pending) {
          this.pending.tools.push(approvedMark(asked, event));
          changed.add("pending");
        }
        changed.add("confirms");
        break;
      }
      case "done":
        this.#done(event, changed);
        break;
      case "error":
        this.#error(event, changed);
        break;
      case "ctx":
        // Its count of memories is the shown conversation's if it measured that one.
        if (
          this.#meters.measured(event, this.current.key) === this.current.key &&
          this.memory.carry(event.memories)
        ) changed.add("memories");
        changed.add("status");
        break;
      case "backend":
        this.backend = backendOf(event);
        this.#meters.sized(this.backend.ctx_max);
        changed.add("status");
        break;
      case "conversation":
        // A reply in flight stays shown when its conversation is reopened:
        // both have the key `id:N`.
        this.#setCurrent(event);
        changed.add("turns").add("pending").add("status").add("list");
        break;
      case "summary":
        if ((event.id ?? null) === this.current.id) {
          this.current.summary = summaryOf(event);
          changed.add("turns");
        }
        break;
      case "file":
        if (this.files.pictures.received(event) !== null) changed.add("files");
        break;
      case "listening":
        this.listening = event.on === true;
        this.canListen = true;
        if (event.ref !== undefined) this.listens.delete(event.ref);
        changed.add("status");
        break;
      default:
        if (this.applyList(event)) changed.add("list").add("status");
    }
    for (const part of this.memory.apply(event)) changed.add(part);
    if (this.notices.length > 0) changed.add("notices");
    return changed;
  }

  /** @param {Hello} event */
  #hello(event) {
    this.greeted = true;
    this.link = { state: "up", code: null, why: "" };
    this.state = event.state ?? "idle";
    this.tool = event.tool ?? null;
    this.model = event.model ?? null;
    this.backend = event.backend && typeof event.backend === "object"
      ? { ...event.backend }
      : null;
    this.#setCurrent(event);
    this.#meters.hello(event, this.current.key);
    this.pending = helloPending(
      event,
      this.current.key,
      (id) => this.#key(id),
    );
    this.confirms = new Map();
    const waiting = helloConfirm(event);
    if (waiting) this.confirms.set(waiting.call, waiting);
    this.listening = typeof event.listening === "boolean"
      ? event.listening
      : null;
    this.canListen = true;
    // Commands sent on an earlier connection are never answered.
    this.helloSidebar(event);
    this.listens.clear();
    this.files.reconnected();
  }

  /** @param {ErrorEvent} event @param {Set<Part>} changed */
  #error(event, changed) {
    changed.add("notices");
    if (event.turn === true) {
      this.#failed(event, changed);
      return;
    }
    const told = refusal(this, event, changed);
    if (told !== null) this.#notice(told, "error");
  }

  /** @param {Done} event @param {Set<Part>} changed */
  #done(event, changed) {
    const pending = this.pending;
    this.pending = null;
    changed.add("pending").add("status");
    if (!pending) return;
    const stopped = event.stopped === true;
    const turn = finishedTurn(pending, event);
    this.#meters.finished(
      typeof event.id === "number" ? `id:${event.id}` : pending.key,
    );
    const current = this.current;
    if (pending.key !== current.key) {
      if (!stopped && typeof event.id === "number") {
        this.#notice(`The reply was saved in “${this.titleOf(event.id)}”.`);
      }
      return;
    }
    // Only a reply started under the conversation shown can have created it.
    if (!stopped && typeof event.id === "number" && current.id === null) {
      current.id = event.id;
      current.key = `id:${event.id}`;
    }
    if (!stopped) this.#meters.finished(current.key);
    changed.add("turns");
    const replaces = pending.replaces || event.replaces === true;
    const notice = placeTurn(current, turn, replaces);
    if (notice) this.#notice(notice);
    if (!stopped && current.id !== null) {
      const place = current.turns.filter(isStored).length - 1;
      this.files.saved(current.id, place, turn, replaces);
    }
  }

  /** @param {ErrorEvent} event @param {Set<Part>} changed */
  #failed(event, changed) {
    const pending = this.pending;
    this.pending = null;
    changed.add("pending").add("status");
    if (!pending || pending.key !== this.current.key || pending.replaces) {
      this.#notice(String(event.message ?? "the reply failed"), "error");
      return;
    }
    this.current.turns.push(failedTurn(pending, event));
    changed.add("turns");
  }

  /** Takes the notices not yet shown. */
  takeNotices() {
    const notices = this.notices;
    this.notices = [];
    return notices;
  }
}
