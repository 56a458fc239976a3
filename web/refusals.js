// @ts-check
/**
 * The errors that answer this page's own commands (docs/protocol.md,
 * "Errors"), each taken to what sent the command: a picture that cannot be
 * had, a search, a command about the memories, a `listen`. Some are no
 * fault of the reader's, and are not told. No DOM here.
 */

/** @typedef {import("./model.js").CanvasModel} CanvasModel */
/** @typedef {import("./model.js").Part} Part */

/**
 * Takes a command's error to what sent it; returns the words to tell the
 * reader, or null when there is nothing to tell.
 * @param {CanvasModel} model
 * @param {import("./model_parts.js").EventOf<"error">} event
 * @param {Set<Part>} changed the parts it changed are added here
 * @returns {string | null}
 */
export function refusal(model, event, changed) {
  // A thumbnail that cannot be had leaves its chip.
  if (model.files.refused(event.ref)) {
    changed.add("files");
    return null;
  }
  // Without search by meaning, words only is no choice: a query refused
  // so is asked again without it.
  if (model.searchRefused(event)) {
    changed.add("list");
    return null;
  }
  // A proposal another client answered first just closes.
  const memory = model.memory.refused(event);
  if (memory.changed) changed.add(memory.changed);
  if (!memory.tell) return null;
  const message = String(event.message ?? "error");
  if (
    event.ref !== undefined && model.listens.delete(event.ref) &&
    event.code === "unknown_command"
  ) {
    model.canListen = false;
    changed.add("status");
    return `This daemon cannot listen (it answered: ${message}); update it to use the microphone.`;
  }
  return message;
}
