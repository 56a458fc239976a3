/**
 * The one logger: one line per event on stderr, `time level message k=v`.
 *
 * Callers pass lengths, ids and counts as fields, never conversation text:
 * history is personal data and the log is not.
 */
import { AssistantError } from "./errors.ts";

/** Severity of a log line. */
export type Level = "debug" | "info" | "warn" | "error";

/** Structured fields appended to a log line as `key=value`. */
export type Fields = Record<
  string,
  string | number | boolean | null | undefined
>;

/** Where log lines go; replaceable in tests. */
export interface LogSink {
  write(line: string): void;
}

const encoder = new TextEncoder();

const stderrSink: LogSink = {
  write(line) {
    try {
      Deno.stderr.writeSync(encoder.encode(line));
    } catch {
      // A closed stderr must never take the daemon down.
    }
  },
};

let sink: LogSink = stderrSink;
let quiet = false;

/** Replaces the sink (tests) and returns the previous one. */
export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

/** Silences `debug` and `info` lines (client commands that own the terminal). */
export function setQuiet(value: boolean): void {
  quiet = value;
}

function format(value: unknown): string {
  const text = String(value);
  return /[\s"=]/.test(text) || text === "" ? JSON.stringify(text) : text;
}

function emit(level: Level, message: string, fields?: Fields): void {
  if (quiet && (level === "debug" || level === "info")) return;
  let line = `${new Date().toISOString()} ${level} ${message}`;
  if (fields) {
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined) line += ` ${key}=${format(value)}`;
    }
  }
  sink.write(line + "\n");
}

/** Describes an error for the log: class and message, with causes. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  let text = `${error.name}: ${error.message}`;
  if (error.cause !== undefined) {
    text += ` (cause: ${describeError(error.cause)})`;
  }
  return text;
}

/**
 * Describes an error whose causes may quote conversation text (a JSON parse
 * error quotes the chunk it choked on): the message of the error itself,
 * without what it quotes from llama-server, and only the class names of its
 * causes.
 */
export function describeSafely(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const message = error instanceof AssistantError
    ? error.loggable
    : error.message;
  let text = `${error.name}: ${message}`;
  for (
    let cause = error.cause;
    cause !== undefined;
    cause = (cause as Error).cause
  ) {
    text += ` (cause: ${cause instanceof Error ? cause.name : typeof cause})`;
    if (!(cause instanceof Error)) break;
  }
  return text;
}

/** The logger used by every module. */
export const log = {
  debug: (message: string, fields?: Fields) => emit("debug", message, fields),
  info: (message: string, fields?: Fields) => emit("info", message, fields),
  warn: (message: string, fields?: Fields) => emit("warn", message, fields),
  error: (message: string, fields?: Fields) => emit("error", message, fields),
};
