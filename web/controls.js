// @ts-check
/// <reference lib="dom" />
/**
 * What the reader does: the composer, the buttons, the list, the approval
 * prompt and the keyboard (keyboard first: Enter sends, Shift+Enter a new
 * line, Esc stops), each turned into a command of the protocol.
 */
import { bindAttach } from "./attach.js";
import { $ } from "./dom.js";
import { bindMemories } from "./memory_controls.js";
import { isStored } from "./model.js";
import { Panels } from "./panels.js";
import { SearchBox } from "./search_box.js";
import { copyCode } from "./turn_view.js";

/** @typedef {import("./model.js").CanvasModel} CanvasModel */
/** @typedef {import("./model.js").Part} Part */
/**
 * @template {import("./model_parts.js").WireEvent["type"]} T
 * @typedef {import("./model_parts.js").EventOf<T>} EventOf
 */
/** @typedef {import("./view.js").CanvasView} CanvasView */
/** @typedef {(command: import("./connection.js").Command) => string | null} Send */
/**
 * @typedef {{drawn(changed: Set<Part>): void,
 *   conversationShown(event: EventOf<"conversation">): void,
 *   answered(event: {type: string, ref?: string | number}): void,
 *   linkLost(): void, focusInput(): void}} Controls
 */

/**
 * Binds every control of the page.
 * @param {{model: CanvasModel, view: CanvasView, send: Send}} parts
 * @returns {Controls}
 */
export function bindControls({ model, view, send }) {
  const input = /** @type {HTMLTextAreaElement} */ ($("input"));
  const panels = new Panels();
  const search = new SearchBox(model, send, () => view.drawList(model));
  const memories = bindMemories({ model, view, send, panels });
  const attach = bindAttach({
    input,
    notice: (text, kind) => view.notice(text, kind),
  });
  const { attachments } = attach;
  let editing = false;
  let askedPrivate = false;
  let submitting = false;

  const setEditing = (/** @type {boolean} */ on) => {
    editing = on;
    $("editing").hidden = !on;
    // An edit without files keeps the question's own.
    $("editing-files").hidden = !on ||
      (model.current.turns.at(-1)?.files?.length ?? 0) === 0;
    $("send").textContent = on ? "Save & ask" : "Send";
  };

  /**
   * Sends a question with its files; its ref, or null when it was not sent.
   * @param {"ask" | "edit"} type
   * @param {string} text
   * @param {import("./attachments.js").Attachment[]} files
   * @param {(string | null)[]} sources the pictures' previews
   */
  const question = (type, text, files, sources) => {
    const ref = send({ type, text, ...(files.length > 0 ? { files } : {}) });
    if (ref === null) return null;
    if (files.length > 0) model.files.sent(ref, { files, sources });
    return ref;
  };

  const submit = async () => {
    if (submitting) return;
    if (attachments.sending) {
      view.notice("The files are still on their way to the daemon.", "error");
      return;
    }
    submitting = true;
    try {
      await attachments.settled();
    } finally {
      submitting = false;
    }
    const problem = attachments.problem();
    if (problem) {
      view.notice(problem, "error");
      return;
    }
    const text = input.value;
    const files = attachments.attachments();
    if (text.trim() === "" && files.length === 0) return;
    const type = editing ? "edit" : "ask";
    // Never a line the daemon would refuse as too long; with files, the
    // composer already says so above the input.
    const over = attach.limit(type, text);
    if (over) {
      if (files.length === 0) view.notice(over, "error");
      return;
    }
    const ref = question(type, text, files, attachments.sources());
    if (ref === null) return;
    if (files.length > 0) attachments.sent(ref, { text, edit: editing });
    input.value = "";
    setEditing(false);
  };

  /** Asks a question the daemon did not keep again, with the files this page sent with it. */
  const askAgain = (/** @type {import("./model_parts.js").Turn} */ turn) => {
    const files = turn.resend ?? [];
    if ((turn.files?.length ?? 0) > files.length) {
      input.value = turn.user;
      input.focus();
      view.notice(
        "This question's files were not kept: attach them again, then send it.",
        "error",
      );
      return;
    }
    question("ask", turn.user, files, turn.sources ?? []);
  };

  const stop = () => send({ type: "stop" });
  const retry = () => send({ type: "retry" });
  const fresh = (/** @type {boolean} */ isPrivate) => {
    if (!isPrivate) send({ type: "new" });
    else if (send({ type: "new", private: true }) !== null) askedPrivate = true;
    panels.drawer(false);
  };

  const editLast = () => {
    const last = model.current.turns.at(-1);
    if (!last) return;
    input.value = last.user;
    // A stopped or failed question was never kept: it is asked anew.
    setEditing(isStored(last));
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  };

  const titleEdit = /** @type {HTMLInputElement} */ ($("title-edit"));
  const startRename = () => {
    if (model.current.id === null) return;
    titleEdit.value = model.title;
    titleEdit.hidden = false;
    $("title").hidden = true;
    titleEdit.focus();
    titleEdit.select();
  };
  const endRename = (/** @type {boolean} */ save) => {
    if (titleEdit.hidden) return;
    const title = titleEdit.value.trim();
    titleEdit.hidden = true;
    $("title").hidden = false;
    if (save && title !== "" && model.current.id !== null) {
      send({ type: "rename", id: model.current.id, title });
    }
    input.focus();
  };

  const removeCurrent = () => {
    const id = model.current.id;
    if (id === null) return;
    if (!confirm(`Delete “${model.title}”? This cannot be undone.`)) return;
    send({ type: "delete", id });
  };

  const answerConfirm = (/** @type {string} */ call, allow = true) =>
    send({ type: "approve", call, allow });
  const firstConfirm = () => model.confirms.values().next().value ?? null;

  const toggleListen = () => {
    const ref = send({ type: "listen", on: model.listening !== true });
    if (ref !== null) model.listenSent(ref);
  };

  const focusSearch = () => {
    if (panels.narrow) panels.drawer(true);
    search.field.focus();
    search.field.select();
  };

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    void submit();
  });
  $("stop").addEventListener("click", stop);
  $("stop-elsewhere").addEventListener("click", stop);
  $("new").addEventListener("click", () => fresh(false));
  $("private").addEventListener("click", () => fresh(true));
  $("listen").addEventListener("click", toggleListen);
  $("rename").addEventListener("click", startRename);
  $("title").addEventListener("dblclick", startRename);
  for (const format of ["markdown", "json"]) {
    $(format === "json" ? "export-json" : "export-md").addEventListener(
      "click",
      () => send({ type: "export", id: model.current.id, format }),
    );
  }
  $("delete").addEventListener("click", removeCurrent);
  $("editing-cancel").addEventListener("click", () => setEditing(false));

  titleEdit.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      endRename(true);
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      endRename(false);
    }
  });
  titleEdit.addEventListener("blur", () => endRename(false));

  const list = $("list");
  list.addEventListener("click", (event) => {
    const entry = event.target instanceof Element
      ? event.target.closest("button.conv")
      : null;
    if (!(entry instanceof HTMLElement)) return;
    send({ type: "open", id: Number(entry.dataset.id) });
    panels.drawer(false);
  });
  list.addEventListener("keydown", (event) => {
    const entries = /** @type {HTMLElement[]} */ ([
      ...list.querySelectorAll("button.conv"),
    ]);
    const at = entries.indexOf(
      /** @type {HTMLElement} */ (document.activeElement),
    );
    if (at === -1) return;
    if (event.key === "ArrowDown") {
      event.preventDefault();
      entries[Math.min(at + 1, entries.length - 1)]?.focus();
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      if (at === 0) search.field.focus();
      else entries[at - 1]?.focus();
    }
  });

  $("log").addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const copy = target?.closest("button.copy");
    if (copy instanceof HTMLButtonElement) void copyCode(copy, view);
    else if (target?.closest("button.retry")) retry();
    else if (target?.closest("button.edit")) editLast();
    else if (target?.closest("button.again")) {
      const last = model.current.turns.at(-1);
      if (last) askAgain(last);
    }
  });

  $("confirms").addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const pressed = target?.closest("button");
    const row = target?.closest(".confirm");
    if (!pressed || !(row instanceof HTMLElement)) return;
    const item = model.confirms.get(row.dataset.call ?? "") ??
      [...model.confirms.values()].find((c) =>
        String(c.call) === row.dataset.call
      );
    if (item) answerConfirm(item.call, pressed.classList.contains("allow"));
  });

  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void submit();
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
      } else if (panels.closeAll()) {
        event.preventDefault();
        input.focus();
      }
      return;
    }
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k") {
      event.preventDefault();
      focusSearch();
      return;
    }
    if (event.key === "/" && !typing) {
      event.preventDefault();
      focusSearch();
      return;
    }
    if (event.key === "?" && !typing) {
      event.preventDefault();
      panels.help(!panels.helpOpen);
      return;
    }
    if (event.key === "F2") {
      event.preventDefault();
      startRename();
      return;
    }
    if (!event.altKey || event.ctrlKey || event.metaKey) return;
    const waiting = firstConfirm();
    const keys = /** @type {Record<string, () => unknown>} */ ({
      KeyN: () => {
        fresh(false);
        input.focus();
      },
      KeyP: () => {
        fresh(true);
        input.focus();
      },
      KeyR: retry,
      KeyL: toggleListen,
      KeyU: attach.pick,
      ...memories.keys(),
      ...(waiting
        ? {
          KeyA: () => answerConfirm(waiting.call, true),
          KeyD: () => answerConfirm(waiting.call, false),
        }
        : {}),
    });
    const action = keys[event.code];
    if (action) {
      event.preventDefault();
      action();
    }
  });

  /** A refused question back in the composer, its files still attached. */
  const giveBack = (/** @type {import("./attachments.js").Returned} */ q) => {
    if (input.value !== "") return;
    input.value = q.text;
    if (q.edit) setEditing(true);
  };

  return {
    drawn(changed) {
      search.drawn(changed);
      memories.drawn(changed);
    },
    conversationShown(event) {
      if (!askedPrivate) return;
      askedPrivate = false;
      if (event.private !== true) {
        view.notice(
          "This daemon has no private conversations yet: this one will be saved.",
          "error",
        );
      }
    },
    answered(event) {
      const refused = attachments.answered(event);
      if (refused) giveBack(refused);
    },
    linkLost() {
      const lost = attachments.lost();
      if (lost) giveBack(lost);
    },
    focusInput() {
      input.focus();
    },
  };
}
