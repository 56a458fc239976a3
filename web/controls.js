// @ts-check
/// <reference lib="dom" />
/**
 * What the reader does: the composer, the buttons, the list, the approval
 * prompt and the keyboard (keyboard first: Enter sends, Shift+Enter a new
 * line, Esc stops), each turned into a command of the protocol.
 */
import { $ } from "./dom.js";
import { isStored } from "./model.js";
import { Panels } from "./panels.js";
import { SearchBox } from "./search_box.js";

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
 *   focusInput(): void}} Controls
 */

/**
 * Copies a code block's text, with a word on the button that it did.
 * @param {HTMLButtonElement} copy
 * @param {CanvasView} view
 */
async function copyCode(copy, view) {
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

/**
 * Binds every control of the page.
 * @param {{model: CanvasModel, view: CanvasView, send: Send}} parts
 * @returns {Controls}
 */
export function bindControls({ model, view, send }) {
  const input = /** @type {HTMLTextAreaElement} */ ($("input"));
  const panels = new Panels();
  const search = new SearchBox(model, send, () => view.drawList(model));
  let editing = false;
  let askedPrivate = false;

  const setEditing = (/** @type {boolean} */ on) => {
    editing = on;
    $("editing").hidden = !on;
    $("send").textContent = on ? "Save & ask" : "Send";
  };

  const submit = () => {
    const text = input.value;
    if (text.trim() === "") return;
    const command = editing ? { type: "edit", text } : { type: "ask", text };
    if (send(command) !== null) {
      input.value = "";
      setEditing(false);
    }
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
    submit();
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
      if (last) send({ type: "ask", text: last.user });
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

  return {
    drawn(changed) {
      search.drawn(changed);
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
    focusInput() {
      input.focus();
    },
  };
}
