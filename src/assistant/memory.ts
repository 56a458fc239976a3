/**
 * What the assistant remembers of the user: the memories as commands reach
 * them (listed, added, rewritten, forgotten, exported), each change sent to
 * every client, and the block a new conversation's system message ends
 * with: the newest memories that fit `memory_tokens`, as the server's
 * tokenizer counts them. A conversation takes the block at its first
 * request and keeps it for its life (in the history from its first save),
 * so its cached prefix never changes. A memory's text is personal data: the
 * log gets ids and lengths only.
 */
import { AssistantError } from "../base/errors.ts";
import type { Config } from "../base/config.ts";
import { log } from "../base/log.ts";
import {
  type Event,
  type ExportFormat,
  type Ref,
  refField,
} from "../protocol/protocol.ts";
import type { Memories, StoredMemory } from "../store/store.ts";
import { localStamp } from "./prompt.ts";

/** How the memories are introduced at the end of the system message. */
export const MEMORY_INTRO = "What you know about the user:";

/** The `format` of a JSON export of the memories. */
export const MEMORIES_FORMAT = "desktop-assistant-memories/1";

/** What a conversation's requests carry of the memories. */
export interface MemoryBlock {
  /** The text the system message ends with; "" for none. */
  text: string;
  /** How many memories it holds. */
  count: number;
}

/** No memory carried. */
export const NO_MEMORIES: MemoryBlock = Object.freeze({ text: "", count: 0 });

/**
 * Characters a token of ordinary text stays within: memories past this many
 * characters per token of `memory_tokens` could not fit, and are not sent
 * to be counted.
 */
const CHARS_PER_TOKEN = 16;

/** What the memory book needs. */
export interface MemoryBookOptions {
  memories: Memories;
  config: Pick<Config, "memory" | "memory_tokens">;
  /** Sends an event to every client. */
  publish(event: Event): void;
}

/** The memories and their commands. */
export class MemoryBook {
  readonly #o: MemoryBookOptions;

  /** A book over the history's memories. */
  constructor(options: MemoryBookOptions) {
    this.#o = options;
  }

  /** Whether memories are kept and carried at all (`memory` is not `off`). */
  get on(): boolean {
    return this.#o.config.memory !== "off";
  }

  /** The memories, newest first, as `memories`. */
  list(): Event {
    return { type: "memories", items: this.#o.memories.list() };
  }

  /** How many memories there are. */
  count(): number {
    return this.#o.memories.count();
  }

  /** Adds a memory (or, with `id`, rewrites it) and tells every client; returns its id. */
  remember(
    text: string,
    options: {
      id?: number;
      source?: StoredMemory["source"];
      ref?: Ref | undefined;
    } = {},
  ): number {
    const { memories } = this.#o;
    let id = options.id;
    if (id === undefined) {
      id = memories.add(text, options.source ?? null);
      log.info("memory kept", { memory: id, chars: text.length });
    } else {
      if (!memories.rewrite(id, text)) throw noSuchMemory();
      log.info("memory rewritten", { memory: id, chars: text.length });
    }
    this.#changed(options.ref);
    return id;
  }

  /** Names the turn the memories `ids` came from (kept while it ran, before it was saved) and tells every client. */
  sourced(ids: readonly number[], source: { id: number; turn: number }): void {
    let changed = false;
    for (const id of ids) {
      changed = this.#o.memories.setSource(id, source) || changed;
    }
    if (changed) this.#changed(undefined);
  }

  /** Deletes a memory and tells every client. */
  forget(id: number, ref: Ref | undefined): void {
    if (!this.#o.memories.forget(id)) throw noSuchMemory();
    log.info("memory forgotten", { memory: id });
    this.#changed(ref);
  }

  /** The memories in an export format, as `export`. */
  export(format: ExportFormat): Event {
    const items = this.#o.memories.list();
    const text = format === "json"
      ? JSON.stringify(
        { format: MEMORIES_FORMAT, items },
        null,
        2,
      ) +
        "\n"
      : markdown(items);
    return { type: "export", format, text };
  }

  /**
   * The block a conversation's requests carry: the longest run of the
   * newest memories that fits `memory_tokens` with its heading, counted by
   * `count` (the server's tokenizer, else an estimate) as it is sent; none
   * when memory is off. The whole run is counted first, as it mostly fits;
   * otherwise a binary search cuts it, a handful of counts for any number
   * of memories.
   */
  async block(count: (text: string) => Promise<number>): Promise<MemoryBlock> {
    if (!this.on) return NO_MEMORIES;
    const room = this.#o.config.memory_tokens;
    const lines: string[] = [];
    let chars = MEMORY_INTRO.length;
    for (const memory of this.#o.memories.list()) {
      const line = `- ${memory.text.split(/\s*\n\s*/).join(" ")}`;
      chars += line.length + 1;
      if (chars > room * CHARS_PER_TOKEN) break;
      lines.push(line);
    }
    const text = (n: number) =>
      `\n\n${MEMORY_INTRO}\n${lines.slice(0, n).join("\n")}`;
    // `fits` lines fit, `over` do not (one more than there are: unknown).
    let fits = 0;
    let over = lines.length + 1;
    if (lines.length > 0) {
      if (await count(text(lines.length)) <= room) fits = lines.length;
      else over = lines.length;
    }
    while (over - fits > 1) {
      const middle = Math.floor((fits + over) / 2);
      if (await count(text(middle)) <= room) fits = middle;
      else over = middle;
    }
    return fits === 0 ? NO_MEMORIES : { text: text(fits), count: fits };
  }

  #changed(ref: Ref | undefined): void {
    this.#o.publish({ ...this.list(), ...refField(ref) });
  }
}

function noSuchMemory(): AssistantError {
  return new AssistantError("no such memory", { code: "no_such_memory" });
}

function markdown(items: readonly StoredMemory[]): string {
  const date = (seconds: number) => localStamp(new Date(seconds * 1000));
  const lines = ["# What the assistant knows about you", ""];
  if (items.length === 0) lines.push("*(nothing yet)*");
  for (const memory of items) {
    const from = memory.source ? `, from conversation ${memory.source.id}` : "";
    lines.push(
      `- ${memory.text.split(/\s*\n\s*/).join(" ")} *(${
        date(memory.updated)
      }${from})*`,
    );
  }
  return lines.join("\n") + "\n";
}
