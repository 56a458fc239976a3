/**
 * The one logger: one line per event on stderr, `time level message k=v`.
 *
 * Callers pass lengths, ids and counts as fields, never conversation text:
 * history is personal data and the log is not.
 */
import { AssistantError, hasSafeMessage } from "./errors.ts";

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

/** Causes described at most: a chain longer than this is cut, a loop too. */
const MAX_CAUSES = 8;

/** Describes an error for the log, which never quotes personal data: class and message when the message is known safe (`hasSafeMessage`), else class and where it was thrown; each cause alike. */
export function describeError(error: unknown): string {
  let text = describeOne(error);
  let cause = error instanceof Error ? error.cause : undefined;
  for (let depth = 0; cause !== undefined; depth++) {
    if (depth === MAX_CAUSES) return `${text} (cause: …)`;
    text += ` (cause: ${describeOne(cause)})`;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return text;
}

function describeOne(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  if (error instanceof AssistantError) {
    return `${error.name}: ${error.loggable}`;
  }
  if (hasSafeMessage(error)) return `${error.name}: ${error.message}`;
  const frame = thrownAt(error);
  return frame === null ? error.name : `${error.name} ${frame}`;
}

/** The stack's first frame (`at fn (file:line:col)`), read after the message, whose lines it must not be taken from. */
function thrownAt(error: Error): string | null {
  const stack = error.stack ?? "";
  const at = error.message === "" ? -1 : stack.indexOf(error.message);
  const frames = at === -1 ? stack : stack.slice(at + error.message.length);
  const frame = frames.split("\n").find((line) => /^\s+at /.test(line));
  return frame?.trim() ?? null;
}

/** The logger used by every module. */
export const log = {
  debug: (message: string, fields?: Fields) => emit("debug", message, fields),
  info: (message: string, fields?: Fields) => emit("info", message, fields),
  warn: (message: string, fields?: Fields) => emit("warn", message, fields),
  error: (message: string, fields?: Fields) => emit("error", message, fields),
};
