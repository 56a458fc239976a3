/**
 * The think-tag stage: a reply's leading `<think>…</think>` inside content,
 * from a server that does not split reasoning, routed to think deltas.
 */
import type { Delta } from "./chat_deltas.ts";

const OPEN = "<think>";
const CLOSE = "</think>";

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTag(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

/**
 * Routes a reply's leading `<think>…</think>` to think deltas, for a server
 * that does not split reasoning (llama-server with `reasoning_format: none`
 * sends the tags inside content). Only a response whose content begins with
 * `<think>` (after whitespace) and that carried no `reasoning_content`
 * before it is routed, and only that one block: a server that splits
 * reasoning sends no tags, so a `<think>` anywhere else is the answer's own
 * text (a question about the tags) and passes through as content.
 */
export class ThinkTagStream extends TransformStream<Delta, Delta> {
  /** Creates the stage; content passes through, less the whitespace right after a routed tag. */
  constructor() {
    // "start": no content yet, so the reply may still open with the tag;
    // "thinking": inside the leading block; "plain": everything is content.
    let mode: "start" | "thinking" | "plain" = "start";
    // Text that may still be (the start of) a tag, held until the next piece decides.
    let held = "";
    // Templates put newlines after both tags; they are layout, not text.
    let afterTag = false;
    const emit = (
      c: TransformStreamDefaultController<Delta>,
      text: string,
    ) => {
      if (afterTag) {
        text = text.trimStart();
        if (text !== "") afterTag = false;
      }
      if (text !== "") {
        c.enqueue({ kind: mode === "thinking" ? "think" : "content", text });
      }
    };
    const release = (c: TransformStreamDefaultController<Delta>) => {
      const text = held;
      held = "";
      if (mode === "start") mode = "plain";
      emit(c, text);
    };
    const think = (
      c: TransformStreamDefaultController<Delta>,
      text: string,
    ) => {
      const at = text.indexOf(CLOSE);
      if (at === -1) {
        const keep = partialTag(text, CLOSE);
        emit(c, text.slice(0, text.length - keep));
        held = text.slice(text.length - keep);
        return;
      }
      emit(c, text.slice(0, at));
      mode = "plain";
      afterTag = true;
      emit(c, text.slice(at + CLOSE.length));
    };
    super({
      transform(delta, c) {
        if (delta.kind !== "content") {
          // Reasoning of its own, a tool call or the end: no leading tag now.
          release(c);
          c.enqueue(delta);
          return;
        }
        if (mode === "plain") {
          emit(c, delta.text);
          return;
        }
        const text = held + delta.text;
        held = "";
        if (mode === "thinking") {
          think(c, text);
          return;
        }
        const lead = text.trimStart();
        if (lead.startsWith(OPEN)) {
          mode = "thinking";
          afterTag = true;
          think(c, lead.slice(OPEN.length));
        } else if (OPEN.startsWith(lead)) {
          held = text;
        } else {
          mode = "plain";
          emit(c, text);
        }
      },
      flush(c) {
        release(c);
      },
    });
  }
}

/** A side request's answer without its reasoning: every `<think>` block, one never closed running to the end. */
export function withoutThinking(text: string): string {
  return text.replace(/<think>[\s\S]*?(?:<\/think>|$)/g, "");
}
