/**
 * The assistant alone in this process: a real history file in a temporary
 * directory, a scripted model, and the events it sends to every client in
 * one ordered inbox. For the tests of the reply path, where no socket,
 * grant or signal is the point.
 */
import {
  Assistant,
  type AssistantOptions,
} from "../../src/assistant/assistant.ts";
import { type LogSink, setLogSink } from "../../src/base/log.ts";
import type { Command, Event } from "../../src/protocol/protocol.ts";
import { Store } from "../../src/store/store.ts";
import { TURN_CONFIG } from "./turn_config.ts";
import type { ScriptedModel } from "./scripted_model.ts";

/** An event of one type. */
export type EventOf<T extends Event["type"]> = Extract<Event, { type: T }>;

/** What a brain under test is made of. */
export interface BrainOptions {
  llm: ScriptedModel;
  /** Config keys over the turn defaults (a short system prompt, compaction off, memory off). */
  config?: Partial<AssistantOptions["config"]>;
  /** Other options of the assistant (tools, now, ...). */
  assistant?: Partial<Omit<AssistantOptions, "store" | "llm" | "config">>;
}

/** An assistant with its history file and every event it sent. */
export class Brain implements AsyncDisposable {
  /** The assistant of this run (`restart` makes another). */
  assistant: Assistant;
  store: Store;
  readonly llm: ScriptedModel;
  /** Every event sent to every client, in order. */
  readonly events: Event[] = [];
  /** Everything logged. */
  log = "";
  #logged = Promise.withResolvers<void>();
  readonly #dir: string;
  readonly #options: BrainOptions;
  readonly #previousSink: LogSink;
  #read = 0;
  #changed = Promise.withResolvers<void>();

  private constructor(dir: string, options: BrainOptions) {
    this.#dir = dir;
    this.#options = options;
    this.llm = options.llm;
    this.#previousSink = setLogSink({
      write: (line) => {
        this.log += line;
        this.#logged.resolve();
        this.#logged = Promise.withResolvers<void>();
      },
    });
    this.store = new Store(`${dir}/history.db`);
    this.assistant = this.#assistant();
  }

  #assistant(): Assistant {
    return new Assistant({
      store: this.store,
      llm: this.#options.llm,
      config: { ...TURN_CONFIG, ...this.#options.config },
      tools: [],
      emit: (event) => {
        this.events.push(event);
        this.#changed.resolve();
        this.#changed = Promise.withResolvers<void>();
      },
      ...this.#options.assistant,
    });
  }

  /** Stops the assistant and starts another over the same history file, as a restart of the daemon does; the inbox goes on. */
  async restart(): Promise<void> {
    this.assistant.shutdown();
    await this.assistant.settled();
    this.store.close();
    this.store = new Store(`${this.#dir}/history.db`);
    this.assistant = this.#assistant();
  }

  /** A brain over a new, empty history. */
  static async start(options: BrainOptions): Promise<Brain> {
    const dir = await Deno.makeTempDir({ prefix: "da-brain-" });
    return new Brain(dir, options);
  }

  /** Runs a command as a client would send it; resolves to the answer for the asker. */
  send(command: Command): Promise<Event | null> {
    return this.assistant.handle(command);
  }

  /**
   * The events sent since the last call, up to and including the first that
   * matches; fails after `timeoutMs`.
   */
  async until(
    matches: (event: Event) => boolean,
    timeoutMs = 10_000,
  ): Promise<Event[]> {
    const deadline = AbortSignal.timeout(timeoutMs);
    for (;;) {
      const at = this.events.findIndex((e, i) => i >= this.#read && matches(e));
      if (at !== -1) {
        const seen = this.events.slice(this.#read, at + 1);
        this.#read = at + 1;
        return seen;
      }
      await before(
        this.#changed.promise,
        deadline,
        `No matching event within ${timeoutMs} ms`,
      );
    }
  }

  /** Resolves once the log has `count` lines matching `pattern`; fails after `timeoutMs`. */
  async waitForLog(
    pattern: RegExp,
    count = 1,
    timeoutMs = 10_000,
  ): Promise<void> {
    const lines = new RegExp(pattern.source, "gm");
    const deadline = AbortSignal.timeout(timeoutMs);
    while ((this.log.match(lines)?.length ?? 0) < count) {
      await before(
        this.#logged.promise,
        deadline,
        `${pattern} not logged within ${timeoutMs} ms`,
      );
    }
  }

  /** The next event of a type, whatever comes before it. */
  async next<T extends Event["type"]>(type: T): Promise<EventOf<T>> {
    const events = await this.until((e) => e.type === type);
    return events.at(-1) as EventOf<T>;
  }

  /** Asks a question and waits for its turn to end (`state idle`), then for its count, title and summary. */
  async ask(text: string): Promise<Event[]> {
    await this.send({ type: "ask", text });
    const events = await this.until(isIdle);
    await this.assistant.settled();
    return events;
  }

  /** Stops the assistant and removes its history. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.assistant.shutdown();
    await this.assistant.settled();
    this.store.close();
    setLogSink(this.#previousSink);
    await Deno.remove(this.#dir, { recursive: true });
  }
}

/** Resolves when `changed` does; rejects with `message` once `deadline` aborts first. */
function before(
  changed: Promise<void>,
  deadline: AbortSignal,
  message: string,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timedOut = () => reject(new Error(message));
    deadline.addEventListener("abort", timedOut, { once: true });
    changed.then(() => {
      deadline.removeEventListener("abort", timedOut);
      resolve();
    });
  });
}

/** True for the `state idle` that ends every turn. */
export function isIdle(event: Event): boolean {
  return event.type === "state" && event.state === "idle";
}
