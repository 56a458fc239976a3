/**
 * Draws the model into the page. Text from the daemon goes in through
 * textContent, except a reply's Markdown, which goes through markdown.js
 * (raw HTML off). Each part redraws only when the model says it changed;
 * the reply in flight redraws at most once per frame.
 */
import { renderMarkdown, StreamingMarkdown } from "./markdown.js";
import { isStored } from "./model.js";

const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

const numbers = new Intl.NumberFormat("en-US");
const dates = new Intl.DateTimeFormat(undefined, {
  dateStyle: "medium",
  timeStyle: "short",
});

const STATES = {
  idle: "idle",
  thinking: "thinking…",
  tool: "running a tool",
  confirm: "waiting for your approval",
};

const BACKEND = {
  unknown: ["backend: checking…", "unknown"],
  up: ["llama-server up", "up"],
  loading: ["llama-server loading its model…", "warn"],
  no_model: ["no model loaded", "warn"],
  down: ["llama-server down", "down"],
};

const NOTES = {
  stopped: "stopped: this reply was not saved",
  truncated: "cut short: the context or max_tokens ran out",
};

/** What cut a reply short, as `done.truncated_by` names it. */
const CUT_BY = {
  context: "cut short: the model's context is full",
  max_tokens: "cut short: it reached max_tokens",
};

/** The note under a finished turn. */
function noteText(turn) {
  if (turn.status === "error") return turn.error ?? "the reply failed";
  if (turn.status === "truncated") {
    return CUT_BY[turn.truncatedBy] ?? NOTES.truncated;
  }
  return NOTES[turn.status] ?? "";
}

function lastStored(turns) {
  return turns.findLastIndex(isStored);
}

function button(className, text, title) {
  const node = el("button", className, text);
  node.type = "button";
  node.title = title;
  return node;
}

/** Retry and Edit under the last stored turn; Ask again under one that was stopped or failed. */
function turnActions(stored) {
  const actions = el("div", "turn-actions");
  if (stored) {
    actions.append(
      button("retry", "Retry", "Ask the last question again (Alt+R)"),
      button("edit", "Edit", "Edit the last question (↑ in an empty input)"),
    );
  } else {
    actions.append(
      button("again", "Ask again", "Ask this question again"),
    );
  }
  return actions;
}

/** What one drawn turn keeps, to update it in place while it streams. */
function turnParts(turn, { live }) {
  const article = el("article", "turn");
  if (live) article.classList.add("live");
  const question = el("div", "question");
  question.append(el("div", "who", "You"), el("div", "text", turn.user));
  const answer = el("div", "answer");
  const think = el("details", "think");
  think.append(el("summary", "", "Reasoning"));
  const thinkText = el("div", "think-text");
  think.append(thinkText);
  const tools = el("ul", "tools");
  const reply = el("div", "reply md");
  const note = el("div", "note");
  answer.append(think, tools, reply, note);
  article.append(question, answer);
  return {
    article,
    think,
    thinkText,
    tools,
    reply,
    note,
    user: turn.user,
    drawn: null,
    stream: null,
  };
}

function drawTools(list, tools) {
  list.replaceChildren(
    ...tools.map((mark) => {
      if (mark.allowed !== undefined) {
        return el(
          "li",
          mark.allowed ? "tool allowed" : "tool denied",
          `${mark.name}: ${mark.allowed ? "allowed" : "declined"}`,
        );
      }
      return el(
        "li",
        mark.done ? "tool done" : "tool running",
        mark.done ? mark.name : `${mark.name}…`,
      );
    }),
  );
  list.hidden = tools.length === 0;
}

/** A reference definition (`[x]: url`), which can change how earlier text renders. */
const REFERENCE = /^ {0,3}\[[^\]]+\]:/m;

/**
 * The reply that just finished streaming (the same question and reply, as
 * the last turn), kept as the finished turn's drawing: its blocks were
 * drawn as they completed, which is the whole reply drawn once more, except
 * when a reference definition may change how earlier blocks render.
 */
function adopt(live, turn) {
  if (
    !live || live.user !== turn.user || live.drawn !== turn.reply ||
    REFERENCE.test(turn.reply)
  ) {
    return null;
  }
  live.article.classList.remove("live");
  live.stream = null;
  return live;
}

/** Fills a turn's parts; the Markdown only when the reply text changed. */
function fillTurn(parts, turn, { live }) {
  if (parts.drawn !== turn.reply) {
    if (live) {
      parts.stream ??= new StreamingMarkdown(parts.reply);
      parts.stream.update(turn.reply);
    } else {
      parts.reply.innerHTML = renderMarkdown(turn.reply);
    }
    parts.drawn = turn.reply;
  }
  parts.think.hidden = turn.think === "";
  if (parts.thinkText.textContent.length !== turn.think.length) {
    parts.thinkText.textContent = turn.think;
  }
  // Open while the model only reasons; closed once the answer starts,
  // unless the reader opened it.
  if (live && !parts.think.dataset.touched) {
    parts.think.open = turn.reply === "" && turn.think !== "";
  }
  drawTools(parts.tools, turn.tools);
  const status = live ? null : turn.status;
  parts.note.className = `note ${status ?? ""}`;
  parts.note.textContent = status ? noteText(turn) : "";
  parts.note.hidden = !status;
}

/** The page's DOM, drawn from a CanvasModel. */
export class CanvasView {
  #pending = null;
  #replaced = null;
  /** Each turn's article, by the model's turn object, which never changes once stored. */
  #drawn = new WeakMap();

  constructor() {
    this.log = $("log");
  }

  /** Redraws the parts named in `changed`. */
  draw(model, changed) {
    if (changed.has("turns")) this.drawTurns(model);
    if (changed.has("pending") || changed.has("turns")) {
      this.drawPending(model);
    }
    if (["pending", "turns", "list"].some((part) => changed.has(part))) {
      this.drawElsewhere(model);
    }
    if (changed.has("status")) this.drawStatus(model);
    if (changed.has("list")) this.drawList(model);
    if (changed.has("confirms")) this.drawConfirms(model);
  }

  #stickToBottom(update) {
    const log = this.log;
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
    update();
    if (atBottom) log.scrollTop = log.scrollHeight;
  }

  /** The turns of the conversation shown; a turn drawn before is reused, not drawn again. */
  drawTurns(model) {
    this.#stickToBottom(() => {
      const live = this.#pending;
      this.#pending = null;
      this.#replaced = null;
      const turns = model.current.turns;
      const stored = lastStored(turns);
      const nodes = turns.map((turn, index) => {
        let article = this.#drawn.get(turn);
        if (!article) {
          const finished = index === turns.length - 1 &&
            model.shownPending === null;
          const parts = (finished ? adopt(live, turn) : null) ??
            turnParts(turn, { live: false });
          fillTurn(parts, turn, { live: false });
          article = parts.article;
          this.#drawn.set(turn, article);
        }
        article.hidden = false;
        article.classList.toggle("last-stored", index === stored);
        article.classList.toggle("last", index === turns.length - 1);
        article.querySelector(".turn-actions")?.remove();
        if (index === turns.length - 1) {
          article.append(turnActions(index === stored));
        }
        return article;
      });
      if (nodes.length === 0) {
        const empty = el("div", "empty");
        empty.append(
          el(
            "p",
            "",
            model.current.private
              ? "A private conversation: it lives in the daemon's memory only and is gone when you leave it."
              : "Ask anything. Enter sends, Shift+Enter starts a new line, Esc stops a reply.",
          ),
        );
        nodes.push(empty);
      }
      this.log.replaceChildren(...nodes);
    });
  }

  /** The reply in flight, when it belongs to the conversation shown. */
  drawPending(model) {
    const pending = model.shownPending;
    this.#stickToBottom(() => {
      if (!pending) {
        this.#pending?.article.remove();
        this.#pending = null;
        if (this.#replaced) this.#replaced.hidden = false;
        this.#replaced = null;
        return;
      }
      if (!this.#pending || !this.#pending.article.isConnected) {
        this.#pending = turnParts(pending, { live: true });
        this.log.querySelector(".empty")?.remove();
        // A click (or Enter on the summary) is the reader's choice, which
        // the streaming no longer overrides.
        const think = this.#pending.think;
        think.querySelector("summary").addEventListener("click", () => {
          think.dataset.touched = "1";
        });
        this.log.append(this.#pending.article);
      }
      // A retry streams in place of the last turn, which comes back if
      // the retry is stopped or fails.
      const last = this.log.querySelector(".turn.last-stored");
      if (pending.replaces && last) {
        last.hidden = true;
        this.#replaced = last;
      }
      fillTurn(this.#pending, pending, { live: true });
    });
  }

  /** The reply in flight in a conversation other than the one shown. */
  drawElsewhere(model) {
    const elsewhere = model.pending && !model.shownPending
      ? model.pending
      : null;
    $("elsewhere").hidden = elsewhere === null;
    if (elsewhere) {
      // Named when it belongs to a saved conversation; one it will create
      // has no name yet.
      $("elsewhere-text").textContent = elsewhere.id === null
        ? "A reply is streaming in another conversation."
        : `A reply is streaming in “${model.titleOf(elsewhere.id)}”.`;
    }
  }

  /** Header, state, backend, context meter and the composer's buttons. */
  drawStatus(model) {
    document.title = `${model.title} · desktop-assistant`;
    const title = $("title");
    title.textContent = model.title;
    $("private-badge").hidden = !model.current.private;
    const saved = model.current.id !== null;
    for (const id of ["rename", "export-md", "export-json", "delete"]) {
      $(id).disabled = !saved;
    }

    const state = $("state");
    state.textContent = model.state === "tool" && model.tool
      ? `running ${model.tool}`
      : STATES[model.state] ?? model.state;
    state.dataset.state = model.state;

    const backend = $("backend");
    const info = model.backend;
    backend.hidden = info === null;
    let degraded = null;
    if (info) {
      const [label, tone] = BACKEND[info.state] ?? [String(info.state), "warn"];
      let text = label;
      if (info.state === "up" && info.model) text = `${info.model} · ready`;
      if (info.message) text += `: ${info.message}`;
      backend.textContent = text;
      backend.dataset.tone = tone;
      backend.dataset.state = info.state;
      backend.title = info.url ? `llama-server at ${info.url}` : "";
      if (info.state !== "up" && info.state !== "unknown") degraded = text;
    }
    const model_ = $("model");
    model_.textContent = info?.model ?? model.model ?? "";
    model_.hidden = model_.textContent === "" || info?.state === "up";

    const ctx = model.ctx;
    const wrap = $("ctx");
    wrap.hidden = ctx.used === null || ctx.max === null;
    if (!wrap.hidden) {
      const meter = $("ctx-meter");
      meter.max = ctx.max;
      meter.value = Math.min(ctx.used, ctx.max);
      meter.high = ctx.max * 0.8;
      meter.optimum = 0;
      let text = `context ${numbers.format(ctx.used)} / ${
        numbers.format(ctx.max)
      }`;
      if (ctx.sent !== null && ctx.total !== null && ctx.sent < ctx.total) {
        text += ` · ${ctx.sent} of ${ctx.total} earlier turns sent`;
      }
      $("ctx-text").textContent = text;
    }

    const busy = model.busy;
    $("stop").hidden = !busy;
    $("composer").classList.toggle("degraded", degraded !== null);
    $("input").placeholder = degraded
      ? `${degraded}. Asking still tries.`
      : "Ask anything · Enter sends, Shift+Enter new line";
  }

  /** The sidebar: conversations, or search results while searching. */
  drawList(model) {
    const list = $("list");
    const searching = model.results !== null;
    $("list-label").textContent = searching ? "Results" : "Conversations";
    const items = searching ? model.results : model.conversations;
    const nodes = items.map((item) => {
      const li = el("li");
      const button = el("button", "conv");
      button.type = "button";
      button.dataset.id = String(item.id);
      if (item.id === model.current.id) {
        button.setAttribute("aria-current", "true");
      }
      button.append(el("span", "conv-title", item.title || "(untitled)"));
      if (searching) {
        button.append(snippet(item.snippet ?? ""));
      } else if (typeof item.updated === "number") {
        button.append(
          el("span", "conv-date", dates.format(new Date(item.updated * 1000))),
        );
      }
      li.append(button);
      return li;
    });
    if (nodes.length === 0) {
      nodes.push(
        el("li", "none", searching ? "No match." : "No conversations yet."),
      );
    }
    // Redrawn under the reader's keyboard: the same entry keeps the focus.
    const focused = list.contains(document.activeElement)
      ? document.activeElement.dataset.id
      : undefined;
    list.replaceChildren(...nodes);
    if (focused !== undefined) {
      list.querySelector(`button.conv[data-id="${CSS.escape(focused)}"]`)
        ?.focus();
    }
  }

  /** Tool calls waiting for the user's approval. */
  drawConfirms(model) {
    const box = $("confirms");
    box.replaceChildren(
      ...[...model.confirms.values()].map((item) => {
        const row = el("div", "confirm");
        row.dataset.call = String(item.call);
        const args = typeof item.args === "string"
          ? item.args
          : JSON.stringify(item.args ?? {});
        const text = el("span", "confirm-text");
        text.append(
          "Run ",
          el("b", "", String(item.tool ?? "a tool")),
          " with ",
          el("code", "", args.length > 400 ? `${args.slice(0, 400)}…` : args),
          "?",
        );
        const allow = el("button", "allow", "Allow");
        allow.type = "button";
        allow.title = "Alt+A";
        const deny = el("button", "deny", "Deny");
        deny.type = "button";
        deny.title = "Alt+D";
        row.append(text, allow, deny);
        return row;
      }),
    );
    box.hidden = model.confirms.size === 0;
  }

  /** Shows a message for a few seconds (errors stay until dismissed). */
  notice(text, kind = "info") {
    const box = $("notices");
    const item = el("div", `notice ${kind}`);
    item.append(el("span", "", text));
    const close = el("button", "dismiss", "×");
    close.type = "button";
    close.title = "Dismiss";
    close.addEventListener("click", () => item.remove());
    item.append(close);
    box.append(item);
    while (box.children.length > 4) box.firstElementChild?.remove();
    if (kind !== "error") setTimeout(() => item.remove(), 8000);
  }

  /** The connection's state, in the header. */
  connection(text, tone) {
    const node = $("connection");
    node.textContent = text;
    node.dataset.tone = tone;
  }
}

/** A search snippet with its `**`-marked matches as <mark>, all as text. */
function snippet(text) {
  const span = el("span", "conv-snippet");
  text.split("**").forEach((part, index) => {
    span.append(index % 2 === 1 ? el("mark", "", part) : part);
  });
  return span;
}
