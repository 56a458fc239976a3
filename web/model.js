/**
 * The page's picture of the daemon, built only from the socket protocol's
 * events applied in order (README, "Protocol"). No DOM here: the view draws
 * what this holds, and a test can feed it events.
 *
 * Every field an older daemon does not send is simply absent here too:
 * `backend`, `ctx.sent`/`ctx.total`, `private`, `replaces`, `truncated`,
 * `confirm`/`approved`, `renamed` and `export` are shown once they arrive.
 */

/** @typedef {{name: string, done?: boolean, allowed?: boolean}} ToolMark */
/**
 * @typedef {{user: string, reply: string, think: string, tools: ToolMark[],
 *   status: null | "stopped" | "truncated" | "error", error?: string,
 *   truncatedBy?: string}} Turn
 * `truncatedBy`: what cut a truncated reply short (`context` or
 * `max_tokens`), when the daemon says.
 */
/**
 * @typedef {{key: string, id: number | null, user: string, reply: string,
 *   think: string, tools: ToolMark[], replaces: boolean}} Pending
 * `key` is the conversation it belongs to as the page tells them apart;
 * `id` its number when known (null for one its `done` will create).
 */
/** @typedef {{key: string, id: number | null, private: boolean, turns: Turn[]}} Shown */

/** Whether the daemon keeps this turn: a stopped or failed one is only shown. */
export function isStored(turn) {
  return turn.status !== "stopped" && turn.status !== "error";
}

/** The reply in flight: what `user`, `think`, `token` and `tool` built so far. */
function newPending(key, id, user, replaces) {
  return { key, id, user, reply: "", think: "", tools: [], replaces };
}

function storedTurn(turn) {
  const tools = Array.isArray(turn?.tools) ? turn.tools : [];
  return {
    user: String(turn?.user ?? ""),
    reply: String(turn?.reply ?? ""),
    think: "",
    tools: tools.map((name) => ({ name: String(name), done: true })),
    status: null,
  };
}

function numberOrNull(value) {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

function isConfirm(value) {
  return value !== null && typeof value === "object" &&
    value.call !== undefined;
}

/**
 * The tool call a `hello` says waits for approval: `hello.confirm`, sent
 * whichever conversation the reply belongs to, else `hello.pending.confirm`
 * (a daemon without the first).
 */
function helloConfirm(event) {
  if (isConfirm(event.confirm)) return event.confirm;
  if (isConfirm(event.pending?.confirm)) return event.pending.confirm;
  return null;
}

/** The daemon's state as the page knows it; `apply` returns what changed. */
export class CanvasModel {
  constructor() {
    /** Whether a `hello` arrived on this connection. */
    this.greeted = false;
    /** `idle`, `thinking`, `tool` or `confirm`. */
    this.state = "idle";
    this.tool = null;
    this.model = null;
    this.ctx = { used: null, max: null, sent: null, total: null };
    /** `{state, url, model, ctx_max, message}` once the daemon sends it. */
    this.backend = null;
    /** @type {Shown} The conversation shown: `key` tells apart unsaved ones. */
    this.current = { key: "new:0", id: null, private: false, turns: [] };
    /** @type {Pending | null} The reply in flight, in whichever conversation it started. */
    this.pending = null;
    /** Tool calls waiting for approval, by call id. */
    this.confirms = new Map();
    /** `[{id, title, updated}]`, newest first. */
    this.conversations = [];
    /** Search results `[{id, title, snippet}]`, or null when not searching. */
    this.results = null;
    /** The query in the search box (null when empty): only its answers are shown. */
    this.query = null;
    /** The query `results` answers. */
    this.resultsFor = null;
    /** Searches sent and not yet answered: ref to query. */
    this.searches = new Map();
    /** Messages for the user, oldest first; the view takes them. */
    this.notices = [];
    this.fresh = 0;
  }

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

  /** The title of the conversation shown. */
  get title() {
    const { id } = this.current;
    if (this.current.private) return "Private conversation";
    if (id === null) return "New conversation";
    return this.titleOf(id);
  }

  /** A conversation's title as last listed or renamed. */
  titleOf(id) {
    const item = this.conversations.find((entry) => entry.id === id);
    return item ? item.title : `Conversation ${id}`;
  }

  #key(id) {
    return id === null ? `new:${++this.fresh}` : `id:${id}`;
  }

  #notice(text, kind = "info") {
    this.notices.push({ text, kind });
  }

  #setCurrent(id, turns, isPrivate) {
    this.current = {
      key: this.#key(id),
      id,
      private: isPrivate === true,
      turns: Array.isArray(turns) ? turns.map(storedTurn) : [],
    };
  }

  #ensurePending() {
    this.pending ??= newPending(this.current.key, this.current.id, "", false);
    return this.pending;
  }

  /**
   * The reply in flight from a `hello`. It is the shown conversation's
   * exactly when `pending.id` is `hello.id`; otherwise it streams elsewhere
   * (in conversation `pending.id`, which shows it once opened). A reply the
   * daemon leaves out (`pending: null` while `state` says one runs) will
   * create a conversation other than the unsaved one shown: it streams
   * elsewhere too, under a key no conversation shown has.
   */
  #helloPending(event) {
    const p = event.pending;
    if (!p || typeof p !== "object") {
      return event.state && event.state !== "idle"
        ? newPending(this.#key(null), null, "", false)
        : null;
    }
    const id = typeof p.id === "number" ? p.id : null;
    const key = p.id === (event.id ?? null) ? this.current.key : this.#key(id);
    const pending = newPending(
      key,
      id,
      String(p.user ?? ""),
      p.replaces === true,
    );
    pending.reply = String(p.reply ?? "");
    pending.think = String(p.think ?? "");
    pending.tools = (Array.isArray(p.tools) ? p.tools : []).map(
      (name) => ({ name: String(name), done: true }),
    );
    return pending;
  }

  /** A search sent with `ref` for `q`, which is now the query shown. */
  searchSent(ref, q) {
    this.query = q;
    this.searches.set(ref, q);
  }

  /** The search box emptied: the conversations again, and late answers dropped. */
  clearSearch() {
    this.query = null;
    this.results = null;
    this.resultsFor = null;
  }

  /** Whether `q`'s results are shown or on their way. */
  searching(q) {
    return this.resultsFor === q || [...this.searches.values()].includes(q);
  }

  /** Applies one event; returns the set of parts that changed: `turns`, `pending`, `status`, `list`, `confirms`, `notices`. */
  apply(event) {
    const changed = new Set();
    switch (event.type) {
      case "hello": {
        this.greeted = true;
        this.state = event.state ?? "idle";
        this.tool = event.tool ?? null;
        this.model = event.model ?? null;
        this.ctx = {
          used: numberOrNull(event.ctx_used),
          max: numberOrNull(event.ctx_max),
          sent: numberOrNull(event.ctx_sent),
          total: numberOrNull(event.ctx_total),
        };
        this.backend = event.backend && typeof event.backend === "object"
          ? { ...event.backend }
          : null;
        this.#setCurrent(event.id ?? null, event.turns, event.private);
        this.pending = this.#helloPending(event);
        this.confirms = new Map();
        const waiting = helloConfirm(event);
        if (waiting) {
          this.confirms.set(waiting.call, {
            call: waiting.call,
            tool: waiting.tool,
            args: waiting.args,
          });
        }
        // Searches sent on an earlier connection are never answered.
        this.searches.clear();
        for (const part of ["turns", "pending", "status", "confirms"]) {
          changed.add(part);
        }
        break;
      }
      case "state":
        this.state = event.state;
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
        changed.add("pending");
        changed.add("status");
        break;
      case "think":
        this.#ensurePending().think += event.delta ?? "";
        changed.add("pending");
        break;
      case "token":
        this.#ensurePending().reply += event.delta ?? "";
        changed.add("pending");
        break;
      case "tool": {
        const tools = this.#ensurePending().tools;
        if (event.done) {
          const running = tools.findLast((mark) =>
            mark.name === event.name && mark.done === false
          );
          if (running) running.done = true;
          else tools.push({ name: event.name, done: true });
        } else {
          tools.push({ name: event.name, done: false });
        }
        changed.add("pending");
        break;
      }
      case "confirm":
        this.confirms.set(event.call, {
          call: event.call,
          tool: event.tool,
          args: event.args,
        });
        changed.add("confirms");
        break;
      case "approved": {
        const asked = this.confirms.get(event.call);
        this.confirms.delete(event.call);
        if (this.pending) {
          this.pending.tools.push({
            name: asked?.tool ?? "tool",
            allowed: event.allow === true,
          });
          changed.add("pending");
        }
        changed.add("confirms");
        break;
      }
      case "done":
        this.#done(event, changed);
        break;
      case "error":
        if (event.turn === true) this.#failed(event, changed);
        else {
          this.searches.delete(event.ref);
          this.#notice(String(event.message ?? "error"), "error");
        }
        changed.add("notices");
        break;
      case "ctx":
        this.ctx = {
          used: numberOrNull(event.used),
          max: numberOrNull(event.max),
          sent: numberOrNull(event.sent),
          total: numberOrNull(event.total),
        };
        changed.add("status");
        break;
      case "backend":
        this.backend = {
          state: event.state,
          url: event.url ?? null,
          model: event.model ?? null,
          ctx_max: event.ctx_max ?? null,
          message: event.message ?? null,
        };
        changed.add("status");
        break;
      case "conversations":
        this.conversations = Array.isArray(event.items) ? event.items : [];
        changed.add("list");
        changed.add("status");
        break;
      case "results": {
        // Paired with its query by ref; an answer to a query no longer in
        // the box is dropped.
        const q = this.searches.get(event.ref);
        this.searches.delete(event.ref);
        if (q === undefined || q !== this.query) break;
        this.results = Array.isArray(event.items) ? event.items : [];
        this.resultsFor = q;
        changed.add("list");
        break;
      }
      case "conversation":
        // A reply in flight stays shown when its conversation is reopened:
        // both have the key `id:N`.
        this.#setCurrent(event.id ?? null, event.turns, event.private);
        changed.add("turns");
        changed.add("pending");
        changed.add("status");
        changed.add("list");
        break;
      case "renamed": {
        const item = this.conversations.find((entry) => entry.id === event.id);
        if (item) item.title = event.title;
        else {
          this.conversations.unshift({
            id: event.id,
            title: event.title,
            updated: Math.floor(Date.now() / 1000),
          });
        }
        for (const hit of this.results ?? []) {
          if (hit.id === event.id) hit.title = event.title;
        }
        changed.add("list");
        changed.add("status");
        break;
      }
    }
    if (this.notices.length > 0) changed.add("notices");
    return changed;
  }

  #done(event, changed) {
    const pending = this.pending;
    this.pending = null;
    changed.add("pending");
    changed.add("status");
    if (!pending) return;
    const stopped = event.stopped === true;
    const truncated = !stopped && event.truncated === true;
    const turn = {
      user: pending.user,
      reply: pending.reply,
      think: pending.think,
      tools: pending.tools,
      status: stopped ? "stopped" : truncated ? "truncated" : null,
      ...(truncated && typeof event.truncated_by === "string"
        ? { truncatedBy: event.truncated_by }
        : {}),
    };
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
    changed.add("turns");
    if (pending.replaces || event.replaces === true) {
      if (stopped) {
        this.#notice("The retry was stopped: the earlier reply is kept.");
        return;
      }
      // It replaces the last turn the daemon keeps; turns shown after it
      // (stopped or failed, never stored) go with it.
      const index = current.turns.findLastIndex(isStored);
      current.turns.splice(index === -1 ? 0 : index, Infinity, turn);
      return;
    }
    current.turns.push(turn);
  }

  #failed(event, changed) {
    const pending = this.pending;
    this.pending = null;
    changed.add("pending");
    changed.add("status");
    const message = String(event.message ?? "the reply failed");
    if (!pending || pending.key !== this.current.key || pending.replaces) {
      this.#notice(message, "error");
      return;
    }
    this.current.turns.push({
      user: pending.user,
      reply: pending.reply,
      think: pending.think,
      tools: pending.tools,
      status: "error",
      error: message,
    });
    changed.add("turns");
  }

  /** Takes the notices not yet shown. */
  takeNotices() {
    const notices = this.notices;
    this.notices = [];
    return notices;
  }
}
