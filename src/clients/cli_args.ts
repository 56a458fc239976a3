/**
 * The clients' command lines, read by `node:util`'s `parseArgs`, with its
 * errors said the clients' way: the argument at fault, then the usage.
 */
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";

/** How one client's command line goes. */
export interface CommandLine<T extends ParseArgsOptionsConfig> {
  options: T;
  /** The usage line every error ends with. */
  usage: string;
  /** Whether words other than options are taken (a question, an id). */
  positionals: boolean;
  /** What each string option needs, for the error when it is missing: `a directory`. */
  needs?: { [K in keyof T]?: string };
  /** What an unknown word is called: `option` (default) or `argument`. */
  unknown?: string;
}

/** The values and words of a command line; TypeError naming the argument at fault. */
export function readCommandLine<T extends ParseArgsOptionsConfig>(
  args: string[],
  line: CommandLine<T>,
): ReturnType<typeof parseArgs<{ options: T; allowPositionals: boolean }>> {
  try {
    return parseArgs({
      args,
      options: line.options,
      allowPositionals: line.positionals,
      strict: true,
    });
  } catch (error) {
    throw new TypeError(problem(error, line), { cause: error });
  }
}

/** parseArgs names the argument in quotes; its error code says what is wrong with it. */
function problem<T extends ParseArgsOptionsConfig>(
  error: unknown,
  line: CommandLine<T>,
): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  const named = /'([^' ]+)/.exec(message)?.[1] ?? message;
  const unknown = line.unknown ?? "option";
  // An unknown option, or a word where none is taken.
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const name = named.replace(/^--?/, "");
    const option = line.options[name];
    if (option?.type === "boolean") {
      return `${named} takes no value: ${line.usage}`;
    }
    const needs = line.needs?.[name as keyof T] ?? "a value";
    return `${named} needs ${needs}: ${line.usage}`;
  }
  return `Unknown ${unknown} ${named}: ${line.usage}`;
}
