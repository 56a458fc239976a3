/**
 * The problems of one config file, gathered so that all of them are reported
 * at once: each a TypeError (a key's value) or a SyntaxError (the TOML) whose
 * message names the file and line and is safe for the log.
 */
import { TomlDate, type TomlError } from "smol-toml";
import type { z } from "zod";
import { httpUrl, type Shown } from "./config_schema.ts";
import { withSafeMessage } from "./errors.ts";
import { tomlFault } from "./config_hints.ts";

/** What a refused config file is reported with. */
export interface ConfigReport {
  /** One line each, in the file's order: the file, the line, the key and the fix. */
  problems: string[];
  /** What the file would be warned about if it loaded (unknown keys, ignored fields). */
  warnings: string[];
}

const reports = new WeakMap<Error, ConfigReport>();

/** The problems and warnings a refused config file was thrown with; null for any other error. */
export function configReport(error: unknown): ConfigReport | null {
  return error instanceof Error ? reports.get(error) ?? null : null;
}

/** Marks an error as a refused config's, with what to report; returns it. */
export function refusedConfig<E extends Error>(
  error: E,
  report: ConfigReport,
): E {
  reports.set(withSafeMessage(error), report);
  return error;
}

/** Collects a file's problems as they are found, and throws them together. */
export class ConfigProblems {
  readonly #found: { line: number; error: Error }[] = [];
  /** Where each error this file made was found; any other error is rethrown. */
  readonly #lines = new WeakMap<Error, number>();

  /** Problems of `file`. */
  constructor(readonly file: string) {}

  /** A key's problem, naming the file, the line when known, and the key. */
  typeError(line: number | undefined, key: string, problem: string): TypeError {
    const where = line === undefined ? this.file : `${this.file}:${line}`;
    const error = new TypeError(`${where}: key "${key}" ${problem}`);
    this.#lines.set(error, line ?? Infinity);
    return withSafeMessage(error);
  }

  /** A TOML syntax error in a person's words, from smol-toml's position and reason; the file's lines are never quoted. */
  syntaxError(error: TomlError, text: string): SyntaxError {
    const reason = error.message.replace(/^Invalid TOML document: /, "")
      .split("\n")[0] ?? "";
    const line = text.split(/\r?\n/)[error.line - 1] ?? "";
    const found = new SyntaxError(
      `${this.file}:${error.line}:${error.column}: ${
        tomlFault(reason, line, error.column)
      }`,
    );
    this.#lines.set(found, error.line);
    return withSafeMessage(found);
  }

  /** Keeps one of this file's problems; rethrows any other error. */
  keep(error: unknown): void {
    const line = error instanceof Error ? this.#lines.get(error) : undefined;
    if (line === undefined) throw error;
    this.#found.push({ line, error: error as Error });
  }

  /** Throws what was found, if anything: the one problem itself, or an AggregateError of them all in the file's order. */
  throwIfAny(warnings: string[]): void {
    if (this.#found.length === 0) return;
    const errors = this.#found.toSorted((a, b) => a.line - b.line)
      .map(({ error }) => error);
    const problems = errors.map((error) => error.message);
    const error = errors.length === 1
      ? errors[0]!
      : new AggregateError(errors, problems.join("\n"));
    throw refusedConfig(error, { problems, warnings });
  }
}

/**
 * How an error shows the value it refuses, so that it never prints a secret:
 * - numbers, booleans and dates whole;
 * - a string whole (its first 40 characters) only for a key whose right
 *   values are numbers, booleans or fixed words (`Shown` "value"), where a
 *   string is a slip rather than a secret;
 * - for a URL key, an http(s) URL without its credentials: userinfo, query
 *   and fragment each become "…" (any other string there: its length only);
 * - any other string by its length only;
 * - arrays and tables by their kind, so no command word, `[request]` field or
 *   `[mcp.NAME]` env value is ever quoted (mcp_config.ts quotes no value).
 */
function describeRefused(value: unknown, shown: Shown): string {
  if (typeof value === "string") {
    const text = shown === "value"
      ? value
      : shown === "url"
      ? urlWithoutSecrets(value)
      : undefined;
    if (text === undefined) {
      return `a string of ${[...value].length} characters`;
    }
    const cut = text.length > 40 ? `${text.slice(0, 40)}…` : text;
    return `string ${JSON.stringify(cut)}`;
  }
  if (typeof value === "number") return `number ${value}`;
  if (typeof value === "boolean") return `boolean ${value}`;
  if (value instanceof TomlDate) return `date ${value.toISOString()}`;
  if (Array.isArray(value)) return `an array`;
  return "a table";
}

/** An http(s) URL with "…" for its userinfo, query and fragment; undefined for anything else. */
function urlWithoutSecrets(text: string): string | undefined {
  const url = httpUrl(text);
  if (url === undefined) return undefined;
  const userinfo = url.username !== "" || url.password !== "" ? "…@" : "";
  return `${url.protocol}//${userinfo}${url.host}${url.pathname}${
    url.search === "" ? "" : "?…"
  }${url.hash === "" ? "" : "#…"}`;
}

/** A value checked against its declaration: the parsed data, or what the error says. */
export function checked(
  schema: z.ZodType,
  expected: string,
  shown: Shown,
  value: unknown,
): { data?: unknown; problem?: string } {
  // Issues without a message of their own (type, limits) say `expected`.
  const parsed = schema.safeParse(value, { error: () => expected });
  if (parsed.success) return { data: parsed.data };
  return {
    problem: `must be ${parsed.error.issues[0]?.message ?? expected}, got ${
      describeRefused(value, shown)
    }`,
  };
}
