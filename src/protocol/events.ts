/**
 * The outbound half of the protocol: every event's shape, and its encoding
 * as one JSON line. No I/O here.
 */
import type { ErrorCode } from "../base/error_codes.ts";

export type { ErrorCode } from "../base/error_codes.ts";

/** A client's reference for a command, echoed on its answers and its turn's events. */
export type Ref = string | number;

/** How `export` writes a conversation. */
export type ExportFormat = "markdown" | "json";

/** What a file sent with a question became: its text in the question, a picture, or a document's text from its converter. */
export type FileKind = "text" | "image" | "converted";

/** A file of a question as clients are shown it (its bytes come with the `file` command). */
export interface FileView {
  name: string;
  mime: string;
  /** Its size in bytes, as sent. */
  bytes: number;
  kind: FileKind;
}

/** One turn as clients see it. */
export interface TurnView {
  user: string;
  reply: string;
  tools: string[];
  /** The files sent with the question; absent when none. */
  files?: FileView[];
}

/** A tool call waiting for the user's approval. */
export interface ConfirmView {
  /** The id an `approve` names. */
  call: string;
  tool: string;
  /** The call's arguments as the model sent them. */
  args: Record<string, unknown>;
}

/** The reply in flight, as a newly connected client needs it. */
export interface PendingView {
  user: string;
  reply: string;
  think: string;
  tools: string[];
  /** The files sent with the question; absent when none. */
  files?: FileView[];
  /** A `retry` or `edit`: the last turn goes once this one finishes. */
  replaces?: true;
  /** The call waiting for approval; absent when none waits. */
  confirm?: ConfirmView;
}

/** The reply in flight as `hello` shows it: `id` is its conversation, null for the unsaved current one it will create. */
export interface HelloPending extends PendingView {
  id: number | null;
}

/** What cut a reply short: the context filled up, or `max_tokens` of `[request]` ran out. */
export type Truncation = "context" | "max_tokens";

/** Daemon activity shown by clients. */
export type State = "idle" | "thinking" | "tool" | "confirm";

/** What llama-server can do, as the daemon last found it (`unknown` before the first probe). */
export type BackendState = "unknown" | "up" | "loading" | "no_model" | "down";

/** The `backend` event without its type, and `hello.backend`. */
export interface BackendView {
  state: BackendState;
  url: string;
  /** The model in use when `up`, else null. */
  model: string | null;
  /** Its context size when `up` and known, else null. */
  ctx_max: number | null;
  /** Why it is not `up`, in words; null when `up`. */
  message: string | null;
}

/** What llama-server reported a request cost (the `timings` of its final chunk), and a turn's, summed over its requests. */
export interface Timings {
  /** Prompt tokens the server evaluated. */
  prompt_n: number;
  /** Prompt tokens it reused from its cache instead. */
  cache_n: number;
  /** Tokens it generated. */
  predicted_n: number;
  /** Milliseconds spent evaluating the prompt. */
  prompt_ms: number;
  /** Milliseconds spent generating. */
  predicted_ms: number;
}

/** A conversation's running summary of the turns that left the history window. */
export interface SummaryView {
  text: string;
  /** Earlier turns it covers. */
  turns: number;
}

/** One search hit. */
export interface SearchHit {
  id: number;
  title: string;
  /** The matching text with each match between `**`. */
  snippet: string;
  /** The snippet without markers. */
  text?: string;
  /** The matches in `text`: `[start, end]` UTF-16 offsets, in order. */
  marks?: [number, number][];
  /** The attached file the snippet is from; absent when it is from the question or the reply. */
  file?: string;
  /** How it was found: by its words, its meaning, or both; absent from a daemon without search by meaning. */
  by?: SearchBy;
}

/** How a search finds conversations. */
export type SearchBy = "words" | "meaning" | "both";

/** One memory as clients are shown it: `source` is the conversation and turn (0-based) it came from, null when none or gone. */
export interface MemoryView {
  id: number;
  text: string;
  /** Unix seconds. */
  created: number;
  updated: number;
  source: { id: number; turn: number } | null;
}

/** A fact the assistant proposes to remember, waiting for the user's answer. */
export interface ProposalView {
  /** The id an `accept` or `refuse` names. */
  proposal: string;
  text: string;
  /** The conversation and turn (0-based) it was read from. */
  source: { id: number; turn: number };
}

/** A conversation as `conversations` lists it. */
export interface ConversationItem {
  id: number;
  title: string;
  /** Unix seconds. */
  updated: number;
}

/** The `error` event: `code` is for programs, `message` for people. */
export interface ErrorEvent {
  type: "error";
  code: ErrorCode;
  message: string;
  /** The error ended the reply in flight. */
  turn?: true;
  ref?: Ref;
}

/** Every outbound event. */
export type Event =
  | {
    type: "hello";
    state: State;
    tool?: string;
    model: string | null;
    ctx_used: number | null;
    ctx_max: number | null;
    ctx_sent: number | null;
    ctx_total: number | null;
    /** Earlier turns the current conversation's summary covered at its last reply; null until a reply in it. */
    ctx_summarized: number | null;
    backend?: BackendView;
    id: number | null;
    turns: TurnView[];
    pending: HelloPending | null;
    /** The tool call waiting for approval, whichever conversation its reply belongs to. */
    confirm?: ConfirmView;
    private?: true;
    /** Whether listening is on (the voice client records meanwhile); false at start. Absent from a daemon that has no `listen`. */
    listening?: boolean;
    /** The current conversation's running summary, when it has one. */
    summary?: SummaryView;
    /** How many memories the current conversation's requests carry (taken at its first request; until then, how many there are); always sent by this daemon. */
    memories?: number;
    /** The facts proposed and not yet answered; absent when none. */
    proposed?: ProposalView[];
    /** How far the turns' vectors for search by meaning are, while they are being made; absent otherwise. */
    indexing?: { done: number; total: number };
    /** Whether search by meaning is on (`embed_url` set); always sent by this daemon. */
    meaning?: boolean;
  }
  | { type: "state"; state: State; tool?: string }
  | {
    type: "user";
    text: string;
    /** The files sent with the question; absent when none. */
    files?: FileView[];
    replaces?: true;
    ref?: Ref;
  }
  | { type: "think"; delta: string }
  | { type: "token"; delta: string }
  | { type: "tool"; name: string; done: boolean }
  | ({ type: "confirm" } & ConfirmView)
  | { type: "approved"; call: string; allow: boolean; ref?: Ref }
  | {
    type: "done";
    id: number | null;
    stopped: boolean;
    truncated?: true;
    truncated_by?: Truncation;
    replaces?: true;
    /** Absent when llama-server reported none. */
    timings?: Timings;
    ref?: Ref;
  }
  | ErrorEvent
  | {
    type: "ctx";
    /** The conversation measured: null for the unsaved or private one. */
    id: number | null;
    used: number;
    max: number | null;
    sent: number;
    total: number;
    /** Earlier turns the summary covers, 0 when none. */
    summarized?: number;
    /** Memories the conversation's requests carry; always sent by this daemon. */
    memories?: number;
  }
  | { type: "conversations"; items: ConversationItem[]; ref?: Ref }
  | {
    type: "conversation";
    id: number | null;
    turns: TurnView[];
    private?: true;
    summary?: SummaryView | null;
    /** Memories the conversation's requests carry; always sent by this daemon. */
    memories?: number;
    ref?: Ref;
  }
  | { type: "results"; items: SearchHit[]; ref?: Ref }
  /** A file of a stored turn: `turn` and `index` are 0-based places in `conversation.turns` and its `files`; `data` its bytes in base64. */
  | {
    type: "file";
    conversation: number;
    turn: number;
    index: number;
    name: string;
    mime: string;
    data: string;
    ref?: Ref;
  }
  | { type: "renamed"; id: number; title: string; ref?: Ref }
  | {
    type: "export";
    /** The conversation exported; absent for the memories (`export_memories`). */
    id?: number;
    format: ExportFormat;
    text: string;
    ref?: Ref;
  }
  | {
    type: "pong";
    pid: number;
    uptime: number;
    version: string;
    ref?: Ref;
  }
  | ({ type: "backend" } & BackendView)
  /** The summary changed: `id` null for a private conversation. */
  | ({ type: "summary"; id: number | null } & SummaryView)
  /** The memories, newest first: the answer to `memories`, and to every client after each change. */
  | { type: "memories"; items: MemoryView[]; ref?: Ref }
  /** Turns given their vector for search by meaning, of how many: at most once a second while it runs, and once at the end (`done` equal to `total`). */
  | { type: "indexing"; done: number; total: number }
  /** Facts the assistant proposes to remember, to every client. */
  | { type: "proposed"; items: ProposalView[] }
  /** A proposal was answered (by whichever client first), to every client. */
  | { type: "decided"; proposal: string; accepted: boolean; ref?: Ref }
  /** Listening was switched by a `listen` (its `ref`), to every client, also when it stayed as it was. */
  | { type: "listening"; on: boolean; ref?: Ref };

/** `{ref}` when there is one, else nothing: spread into an event, never `ref: undefined`. */
export function refField(ref: Ref | undefined): { ref?: Ref } {
  return ref === undefined ? {} : { ref };
}

const encoder = new TextEncoder();

/** Encodes an event as one JSON line. */
export function encodeEvent(event: Event): Uint8Array {
  return encoder.encode(JSON.stringify(event) + "\n");
}
