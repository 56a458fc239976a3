/** One line of `main.ts check`'s report, and what the checks are given. */
import { configReport } from "../base/config.ts";
import type { Env } from "../base/paths.ts";

/** How one check came out. */
export type Status = "ok" | "warn" | "fail";

/** One line of the report. */
export interface CheckLine {
  status: Status;
  /** What was checked, e.g. `config`, `llama-server`. */
  subject: string;
  message: string;
}

/** Injected parts of the check; the real ones by default. */
export interface CheckOptions {
  env?: Env;
  fetch?: typeof fetch;
  /** Bound of each request to llama-server, in ms; default 10 000. */
  timeoutMs?: number;
}

/** A request's bound when `timeoutMs` is not given. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** Formats a line as printed: status padded, subject, message. */
export function formatLine(line: CheckLine): string {
  return `${line.status.padEnd(4)} ${line.subject}: ${line.message}`;
}

/** An error's message, for a line. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A refused config's lines: a fail for each problem, then a warn for each warning; null for an error that is not the config's. */
export function configLines(error: unknown): CheckLine[] | null {
  const report = configReport(error);
  if (report === null) return null;
  return [
    ...report.problems.map((message): CheckLine => ({
      status: "fail",
      subject: "config",
      message,
    })),
    ...report.warnings.map((message): CheckLine => ({
      status: "warn",
      subject: "config",
      message,
    })),
  ];
}
