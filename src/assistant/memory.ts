/**
 * What the assistant remembers of the user: the memories as commands reach
 * them (listed, added, rewritten, forgotten, exported), each change sent to
 * every client, and the block a new conversation's system message ends
 * with: the newest memories that fit `memory_tokens`, as the server's
 * tokenizer counts them. A conversation takes the block at its first
 * request and keeps it, so its cached prefix never changes. A memory's text
 * is personal data: the log gets ids and lengths only.
 */
import { AssistantError } from "../base/errors.ts";
import type { Config } from "../base/config.ts";
import { log } from "../base/log.ts";
import {
  type Event,
  type ExportFormat,
  type MemoryView,
  type Ref,
  refField,
} from "../protocol/protocol.ts";
import { folded, type Memories, type StoredMemory } from "../store/store.ts";
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
    return { type: "memories", items: this.#o.memories.list().map(view) };
  }

  /** How many memories there are. */
  count(): number {
    return this.#o.memories.count();
  }

  /** Whether a fact is one already kept (case and spacing aside). */
  keeps(fact: string): boolean {
    const wanted = folded(fact);
    return this.#o.memories.list().some((memory) =>
      folded(memory.text) === wanted
    );
  }

  /** Adds a memory (or, with `id`, rewrites it) and tells every client. */
  remember(
    text: string,
    options: {
      id?: number;
      source?: StoredMemory["source"];
      ref?: Ref | undefined;
    } = {},
  ): void {
    const { memories } = this.#o;
    if (options.id === undefined) {
      const id = memories.add(text, options.source ?? null);
      log.info("memory kept", { memory: id, chars: text.length });
    } else {
      if (!memories.rewrite(options.id, text)) throw noSuchMemory();
      log.info("memory rewritten", { memory: options.id, chars: text.length });
    }
    this.#changed(options.ref);
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
        { format: MEMORIES_FORMAT, items: items.map(view) },
        null,
        2,
      ) +
        "\n"
      : markdown(items);
    return { type: "export", format, text };
  }

  /**
   * The block a conversation's requests carry: the newest memories whose
   * lines fit `memory_tokens` together, counted by `count` (the server's
   * tokenizer, else an estimate); none when memory is off.
   */
  async block(count: (text: string) => Promise<number>): Promise<MemoryBlock> {
    if (!this.on) return NO_MEMORIES;
    let room = this.#o.config.memory_tokens;
    const lines: string[] = [];
    for (const memory of this.#o.memories.list()) {
      const line = `- ${memory.text.split(/\s*\n\s*/).join(" ")}`;
      const tokens = await count(line);
      if (tokens > room) break;
      room -= tokens;
      lines.push(line);
    }
    if (lines.length === 0) return NO_MEMORIES;
    return {
      text: `\n\n${MEMORY_INTRO}\n${lines.join("\n")}`,
      count: lines.length,
    };
  }

  #changed(ref: Ref | undefined): void {
    this.#o.publish({ ...this.list(), ...refField(ref) });
  }
}

function noSuchMemory(): AssistantError {
  return new AssistantError("no such memory", { code: "no_such_memory" });
}

function view(memory: StoredMemory): MemoryView {
  return { ...memory };
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
