// @ts-check
/// <reference lib="dom" />
/**
 * One turn drawn: the question, the reasoning (collapsible), the tools, the
 * reply's Markdown and the note and figures under it. Text from the daemon
 * goes in through textContent, except a reply's Markdown, which goes
 * through markdown.js (raw HTML off).
 */
import { renderMarkdown } from "./markdown.js";
import { StreamingMarkdown } from "./streaming_markdown.js";
import { button, el, numbers } from "./dom.js";

/** @typedef {import("./model_parts.js").Turn} Turn */
/** @typedef {import("./model_parts.js").Pending} Pending */
/** @typedef {import("./model_parts.js").ToolMark} ToolMark */
/** @typedef {import("./model_parts.js").Timings} Timings */
/**
 * What one drawn turn keeps, to update it in place while it streams
 * (`files`: the list of the question's files, which file_view.js draws).
 * @typedef {{article: HTMLElement, think: HTMLDetailsElement,
 *   thinkText: HTMLElement, tools: HTMLElement, reply: HTMLElement,
 *   note: HTMLElement, figures: HTMLElement, files: HTMLElement,
 *   user: string, drawn: string | null,
 *   stream: StreamingMarkdown | null}} TurnParts
 */

/** @type {Record<string, string>} */
const NOTES = {
  stopped: "stopped: this reply was not saved",
  truncated: "cut short: the context or max_tokens ran out",
};

/** @type {Record<string, string>} What cut a reply short, as `done.truncated_by` names it. */
const CUT_BY = {
  context: "cut short: the model's context is full",
  max_tokens: "cut short: it reached max_tokens",
};

/** The note under a finished turn. */
function noteText(/** @type {Turn} */ turn) {
  if (turn.status === "error") return turn.error ?? "the reply failed";
  if (turn.status === "truncated") {
    return CUT_BY[turn.truncatedBy ?? ""] ?? NOTES.truncated ?? "";
  }
  return NOTES[turn.status ?? ""] ?? "";
}

/**
 * The turn's figures from `done.timings`: reply speed, and how much of the
 * prompt llama-server read anew and how much it reused from its cache.
 * @param {Timings} t
 */
export function timingsText(t) {
  const parts = [];
  if (t.predicted_ms > 0) {
    const speed = t.predicted_n / (t.predicted_ms / 1000);
    parts.push(`${speed.toFixed(speed < 10 ? 1 : 0)} tokens/s`);
  }
  parts.push(`${numbers.format(t.predicted_n)} tokens`);
  let prompt = `prompt: ${numbers.format(t.prompt_n)} read`;
  if (t.cache_n > 0) prompt += `, ${numbers.format(t.cache_n)} reused`;
  if (t.prompt_ms > 0) prompt += ` in ${(t.prompt_ms / 1000).toFixed(1)} s`;
  parts.push(prompt);
  return parts.join(" · ");
}

/**
 * Retry and Edit under the last stored turn; Ask again under one that was
 * stopped or failed.
 * @param {boolean} stored
 */
export function turnActions(stored) {
  const actions = el("div", "turn-actions");
  if (stored) {
    actions.append(
      button("retry", "Retry", "Ask the last question again (Alt+R)"),
      button("edit", "Edit", "Edit the last question (↑ in an empty input)"),
    );
  } else {
    actions.append(button("again", "Ask again", "Ask this question again"));
  }
  return actions;
}

/**
 * A turn's elements, empty.
 * @param {Turn | Pending} turn
 * @param {{live: boolean}} options
 * @returns {TurnParts}
 */
export function turnParts(turn, { live }) {
  const article = el("article", "turn");
  if (live) article.classList.add("live");
  const question = el("div", "question");
  const files = el("ul", "files");
  files.setAttribute("aria-label", "Files sent with the question");
  files.hidden = true;
  question.append(
    el("div", "who", "You"),
    el("div", "text", turn.user),
    files,
  );
  const answer = el("div", "answer");
  const think = el("details", "think");
  think.append(el("summary", "", "Reasoning"));
  const thinkText = el("div", "think-text");
  think.append(thinkText);
  const tools = el("ul", "tools");
  const reply = el("div", "reply md");
  const note = el("div", "note");
  const figures = el("div", "figures");
  answer.append(think, tools, reply, note, figures);
  article.append(question, answer);
  return {
    article,
    think,
    thinkText,
    tools,
    reply,
    note,
    figures,
    files,
    user: turn.user,
    drawn: null,
    stream: null,
  };
}

/** @param {HTMLElement} list @param {ToolMark[]} tools */
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
 * The reply that just finished streaming (the same question, and a reply
 * that goes on from what was drawn, as the last turn), kept as the finished
 * turn's drawing: its blocks were drawn as they completed, and only the
 * last is drawn again with the final text. That is the whole reply drawn
 * once more, except when a reference definition may change how earlier
 * blocks render.
 * @param {TurnParts | null} live
 * @param {Turn} turn
 * @returns {TurnParts | null}
 */
export function adopt(live, turn) {
  if (
    !live?.stream || live.user !== turn.user ||
    !turn.reply.startsWith(live.drawn ?? "") || REFERENCE.test(turn.reply)
  ) {
    return null;
  }
  live.stream.finish(turn.reply);
  live.drawn = turn.reply;
  live.article.classList.remove("live");
  live.stream = null;
  return live;
}

/**
 * Fills a turn's parts; the Markdown only when the reply text changed.
 * @param {TurnParts} parts
 * @param {Turn | Pending} turn
 * @param {{live: boolean}} options
 */
export function fillTurn(parts, turn, { live }) {
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
  if ((parts.thinkText.textContent ?? "").length !== turn.think.length) {
    parts.thinkText.textContent = turn.think;
  }
  // Open while the model only reasons; closed once the answer starts,
  // unless the reader opened it.
  if (live && !parts.think.dataset.touched) {
    parts.think.open = turn.reply === "" && turn.think !== "";
  }
  drawTools(parts.tools, turn.tools);
  const finished = live || !("status" in turn) ? null : turn;
  const status = finished?.status ?? null;
  parts.note.className = `note ${status ?? ""}`;
  parts.note.textContent = finished && status ? noteText(finished) : "";
  parts.note.hidden = !status;
  if (finished?.code) parts.note.dataset.code = finished.code;
  const timings = finished?.timings;
  parts.figures.textContent = timings ? timingsText(timings) : "";
  parts.figures.hidden = !timings;
  if (timings) {
    parts.figures.title =
      `${timings.prompt_n} prompt tokens evaluated, ${timings.cache_n} taken from llama-server's cache; ${timings.predicted_n} tokens generated`;
  }
}

/**
 * Copies a code block's text, with a word on the button that it did.
 * @param {HTMLButtonElement} copy
 * @param {{notice(text: string, kind: "info" | "error"): void}} view
 */
export async function copyCode(copy, view) {
  const code = copy.closest(".code-block")?.querySelector("code");
  const text = code?.textContent ?? "";
  try {
    await navigator.clipboard.writeText(text);
    copy.textContent = "Copied";
  } catch {
    view.notice(
      "The browser did not let the page copy: select the code and copy it.",
      "error",
    );
    return;
  }
  setTimeout(() => {
    copy.textContent = "Copy";
  }, 1500);
}
