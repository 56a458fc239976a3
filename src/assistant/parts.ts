/**
 * The brain's parts and how they are wired: conversations and their plans,
 * the tool calls (with the built-in tools), the side requests (titles,
 * summaries, proposals), the archive and the replies. The assistant
 * (assistant.ts) holds them and runs the commands.
 */
import type { Config } from "../base/config.ts";
import type { BackendView, Event } from "../protocol/protocol.ts";
import type { Store } from "../store/store.ts";
import type { McpHub } from "../tools/mcp.ts";
import type { ToolDef } from "../tools/load.ts";
import type { runTool } from "../tools/runner.ts";
import { Archive, type Searcher } from "./archive.ts";
import type { Reading } from "./attachments.ts";
import { CacheBook } from "./cache_book.ts";
import type { Conversation } from "./conversation.ts";
import { Conversations } from "./conversations.ts";
import { IdleRunner } from "./idle_runner.ts";
import type { IdleTimer } from "./idle_spells.ts";
import type { Indexer } from "./indexer.ts";
import type { Meaning } from "./meaning.ts";
import { MemoryBook } from "./memory.ts";
import { rememberTool } from "./memory_commands.ts";
import { Proposer } from "./proposals.ts";
import { recallTool } from "./recall.ts";
import { Replies } from "./replies.ts";
import type { StatusEvent, StatusView } from "./status.ts";
import { Summarizer } from "./summarizer.ts";
import { Titler } from "./title.ts";
import { TokenLedger } from "./token_ledger.ts";
import { ToolCalls } from "./tool_calls.ts";
import type { ModelSource, TurnConfig } from "./turn.ts";

/** Everything the assistant needs, injected. */
export interface AssistantOptions {
  store: Store;
  llm: ModelSource;
  /** `auto_title` absent is off; `memory` absent is off. */
  config:
    & TurnConfig
    & { auto_title?: boolean }
    & Partial<
      Pick<Config, "memory" | "memory_idle" | "memory_tokens" | "recall">
    >;
  tools: readonly ToolDef[];
  emit: (event: Event) => void;
  searcher?: Searcher;
  version?: string;
  now?: () => Date;
  runTool?: typeof runTool;
  /** Coreutils `timeout`, to kill a timed-out tool's whole process group; null kills the tool alone. */
  toolKillHelper?: string | null;
  /** The llama-server state for `hello.backend`. */
  backend?: () => BackendView;
  /** The MCP servers' tools. */
  mcp?: McpHub | null;
  /** Tools that wait for approval (besides tool files that say so), and how long a call waits; default none and 120 s. */
  confirm?: { tools: readonly string[]; timeoutSeconds: number };
  /** The document converters of `[convert]`; default none. */
  reading?: Reading;
  /** The timer of a conversation's idle spell before facts are proposed; default the real one. */
  idleTimer?: IdleTimer;
  /** Search by meaning; absent or null when `embed_url` is empty. */
  meaning?: Pick<Meaning, "search" | "available"> | null;
  /** The background job that makes the turns' vectors; absent without embeddings. */
  indexer?: Indexer | null;
}

/** What the parts tell the assistant, and ask of it. */
export interface Hooks {
  /** Folds an event into the status and sends it to every client. */
  publish(event: StatusEvent): void;
  current(): Conversation;
  status(): StatusView;
  /** Aborts once the daemon is shutting down. */
  shutdown: AbortSignal;
}

/** The assistant's parts. */
export interface Parts {
  conversations: Conversations;
  calls: ToolCalls;
  side: IdleRunner;
  summaries: Summarizer;
  archive: Archive;
  replies: Replies;
  memory: MemoryBook;
  proposer: Proposer;
}

/** Builds and wires the parts. */
export function assemble(options: AssistantOptions, hooks: Hooks): Parts {
  const { publish } = hooks;
  const ledger = new TokenLedger();
  const memoryConfig = {
    ...options.config,
    memory: options.config.memory ?? "off",
    memory_idle: options.config.memory_idle ?? 120,
    memory_tokens: options.config.memory_tokens ?? 300,
  };
  const memory = new MemoryBook({
    memories: options.store.memories,
    config: memoryConfig,
    publish,
  });
  const conversations = new Conversations({
    store: options.store,
    ledger,
    book: new CacheBook(options.store),
    config: options.config,
    memories: memory,
  });
  let replies: Replies | null = null;
  let archive: Archive | null = null;
  const calls = new ToolCalls({
    tools: options.tools,
    mcp: options.mcp ?? null,
    confirm: options.confirm,
    config: options.config,
    emit: publish,
    signal: hooks.shutdown,
    toolKillHelper: options.toolKillHelper ?? null,
    ...(options.runTool ? { runTool: options.runTool } : {}),
    builtins: [
      rememberTool(memory),
      recallTool(
        async (q, limit, exclude) => {
          const found = await archive!.search(q, limit, undefined, exclude);
          return found.type === "results" ? found.items : [];
        },
        (id) => options.store.record(id)?.updated ?? null,
        () => options.config.recall ?? false,
      ),
    ],
  });
  const side = new IdleRunner({
    busy: () => replies?.turn != null,
    // Another request reaches the server: its cache is no longer the last turn's.
    started: () => replies?.cold(),
  });
  const titles = new Titler({
    llm: options.llm,
    request: options.config.request,
    cacheReuse: options.config.cache_reuse,
    save: (id, title) => options.store.rename(id, title),
    emit: publish,
    runner: side,
  });
  const summaries = new Summarizer({
    llm: options.llm,
    ledger,
    config: options.config,
    publish,
    runner: side,
  });
  const proposer = new Proposer({
    llm: options.llm,
    memories: options.store.memories,
    book: memory,
    config: memoryConfig,
    runner: side,
    publish,
    current: hooks.current,
    ...(options.idleTimer ? { timer: options.idleTimer } : {}),
  });
  archive = new Archive({
    store: options.store,
    conversations,
    meaning: options.meaning ?? null,
    searcher: options.searcher,
    titles,
    emit: publish,
  });
  replies = new Replies({
    llm: options.llm,
    config: options.config,
    tools: calls,
    side,
    titles,
    summaries,
    proposals: proposer,
    indexer: options.indexer ?? null,
    now: () => options.now?.() ?? new Date(),
    shutdown: hooks.shutdown,
    current: hooks.current,
    status: hooks.status,
    publish,
  });
  return {
    conversations,
    calls,
    side,
    summaries,
    archive,
    replies,
    memory,
    proposer,
  };
}
