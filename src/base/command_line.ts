/**
 * Every command line (main.ts, the clients, the canvas, voice, launch) read
 * by `node:util`'s `parseArgs` in strict mode. What it refuses becomes a
 * UsageError in one wording: the argument at fault, then the usage line.
 */
import {
  parseArgs,
  type ParseArgsOptionsConfig,
  type ParseArgsOptionsType,
} from "node:util";

/** The exit status of a command line that does not parse (sysexits' EX_USAGE). */
export const USAGE_EXIT = 64;

/** A command line that does not parse; its message names what is wrong, then the usage. */
export class UsageError extends TypeError {
  /** Creates the error from the whole message a command prints. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "UsageError";
  }
}

/** How one command's line goes. */
export interface CommandLine<T extends ParseArgsOptionsConfig> {
  options: T;
  /** The usage line every error ends with. */
  usage: string;
  /** Whether words other than options are taken (a question, an id); default false. */
  positionals?: boolean;
  /** What each string option needs, for the error when it is missing: `a directory`; default `a value`. */
  needs?: { [K in keyof T]?: string };
}

/** The values and words of a command line; UsageError naming the argument at fault. */
export function readCommandLine<T extends ParseArgsOptionsConfig>(
  args: string[],
  line: CommandLine<T>,
): ReturnType<typeof parseArgs<{ options: T; allowPositionals: boolean }>> {
  const allowPositionals = line.positionals ?? false;
  try {
    return parseArgs({ args, options: line.options, allowPositionals });
  } catch (error) {
    if (!isParseArgsError(error)) throw error;
    const what = atFault(args, line) ?? firstSentence(error.message);
    throw new UsageError(`${what}: ${line.usage}`, { cause: error });
  }
}

/** Whether the error is one of parseArgs' own (an unknown option, a missing value, a stray argument). */
function isParseArgsError(error: unknown): error is TypeError {
  return error instanceof TypeError &&
    String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS_");
}

/** parseArgs' own words, for a refusal none of ours describes. */
function firstSentence(message: string): string {
  return message.split(/\.(?:\s|$)|\n/)[0] ?? message;
}

/**
 * The first argument strict parsing refuses, in our words. Its message names
 * the argument in quotes that the argument itself may hold, so the tokens of
 * a lenient parse say which one it is instead.
 */
function atFault<T extends ParseArgsOptionsConfig>(
  args: string[],
  line: CommandLine<T>,
): string | null {
  const { tokens } = parseArgs({
    args,
    options: line.options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === "positional") {
      if (line.positionals) continue;
      return `Unexpected argument ${shown(token.value)}`;
    }
    if (token.kind !== "option") continue;
    const options: ParseArgsOptionsConfig = line.options;
    const type: ParseArgsOptionsType | undefined =
      Object.hasOwn(options, token.name)
        ? options[token.name]?.type
        : undefined;
    const name = shown(token.rawName);
    if (type === undefined) return `Unknown option ${name}`;
    if (type === "boolean") {
      if (token.value !== undefined) return `${name} takes no value`;
      continue;
    }
    // `--dir --loud` gives --dir the value "--loud" here; strict parsing
    // refuses that as a forgotten value.
    const value = token.value;
    if (
      value === undefined ||
      (!token.inlineValue && value.length > 1 && value.startsWith("-"))
    ) {
      const needs = line.needs?.[token.name as keyof T] ?? "a value";
      return `${name} needs ${needs}`;
    }
  }
  return null;
}

/** A word as typed, quoted only when it would not read as one word. */
function shown(word: string): string {
  return /^[^\s"'\\\p{Cc}]+$/u.test(word) ? word : JSON.stringify(word);
}
