// @ts-check
/// <reference lib="dom" />
/**
 * Attaching files to the next question: the Attach button (a file picker,
 * several files at once), files dropped on the conversation or the
 * composer, and a picture pasted. Each shows as a chip above the input,
 * removable until its question is sent; the page says there, before
 * anything is sent, when the files would not fit in one line.
 */
import { Attachments, overLimit } from "./attachments.js";
import { $, placeChildren } from "./dom.js";
import { attachedChip } from "./file_view.js";
import { prepare } from "./pictures.js";

/** @typedef {(text: string, kind?: "info" | "error") => void} Notify */
/**
 * @typedef {{attachments: Attachments<File>, pick(): void,
 *   limit(type: string, text: string): string | null}} Attach
 */

/** Whether a drag carries files (not text or a link from the page). */
function carriesFiles(/** @type {DragEvent} */ event) {
  return event.dataTransfer?.types.includes("Files") === true;
}

/**
 * Binds the Attach button, dropping and pasting.
 * @param {{input: HTMLTextAreaElement, notice: Notify}} parts
 * @returns {Attach}
 */
export function bindAttach({ input, notice }) {
  const picker = /** @type {HTMLInputElement} */ ($("attach-input"));
  const list = $("attached-list");
  const box = $("attached");
  const warning = $("attached-limit");
  const main = /** @type {HTMLElement} */ (document.querySelector("main"));

  const limit = (/** @type {string} */ type, /** @type {string} */ text) => {
    const files = attachments.sized();
    return overLimit({ type, text, ...(files.length > 0 ? { files } : {}) });
  };

  const drawLimit = () => {
    const why = attachments.entries.length > 0
      ? limit("ask", input.value)
      : null;
    warning.hidden = why === null;
    warning.textContent = why ?? "";
  };

  const draw = () => {
    const sending = attachments.sending;
    box.hidden = attachments.entries.length === 0;
    placeChildren(
      list,
      attachments.entries.map((entry) => attachedChip(entry, sending)),
    );
    drawLimit();
  };

  const attachments = new Attachments(prepare, draw);

  const add = (/** @type {Iterable<File>} */ files) => {
    for (const why of attachments.add(files)) notice(why, "error");
  };

  const pick = () => {
    if (attachments.sending) return;
    picker.click();
  };

  $("attach").addEventListener("click", pick);
  picker.addEventListener("change", () => {
    add([...picker.files ?? []]);
    // Emptied, so that picking the same file again is a change too.
    picker.value = "";
    input.focus();
  });
  list.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    const item = target?.closest("button.remove")?.closest("li");
    if (!(item instanceof HTMLElement)) return;
    attachments.remove(Number(item.dataset.id));
    input.focus();
  });
  input.addEventListener("input", drawLimit);

  // Dropped on the conversation or the composer. A file dropped anywhere
  // else would make the browser leave the page to open it: refused there.
  let depth = 0;
  main.addEventListener("dragenter", (event) => {
    if (!carriesFiles(event)) return;
    depth++;
    main.classList.add("dropping");
  });
  main.addEventListener("dragleave", (event) => {
    if (!carriesFiles(event)) return;
    depth = Math.max(0, depth - 1);
    if (depth === 0) main.classList.remove("dropping");
  });
  main.addEventListener("drop", (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    depth = 0;
    main.classList.remove("dropping");
    if (attachments.sending) return;
    add([...event.dataTransfer?.files ?? []]);
    input.focus();
  });
  document.addEventListener("dragover", (event) => {
    if (!carriesFiles(event) || !event.dataTransfer) return;
    event.preventDefault();
    const onComposer = event.target instanceof Node &&
      main.contains(event.target);
    event.dataTransfer.dropEffect = onComposer ? "copy" : "none";
  });
  document.addEventListener("drop", (event) => {
    if (carriesFiles(event)) event.preventDefault();
  });

  // A screenshot is most often pasted, not saved first; in the search box
  // or the title a paste stays theirs.
  document.addEventListener("paste", (event) => {
    if (event.target instanceof HTMLInputElement) return;
    const files = [...event.clipboardData?.files ?? []];
    if (files.length === 0 || attachments.sending) return;
    event.preventDefault();
    add(files);
  });

  return { attachments, pick, limit };
}
