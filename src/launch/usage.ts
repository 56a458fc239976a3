/**
 * Command-line options of main.ts and the launch commands, parsed by
 * `node:util` `parseArgs`. A command line that does not parse is a
 * UsageError, which main.ts prints before it exits with 64 (EX_USAGE).
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

/** A command line that does not parse; its message says what to type instead. */
export class UsageError extends TypeError {
  /** Creates the error from the whole message main.ts prints. */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** The exit status of a command line that does not parse (sysexits' EX_USAGE). */
export const USAGE_EXIT = 64;

/** Whether the error is one of parseArgs' own (an unknown option, a missing value, a stray argument). */
function isParseArgsError(error: unknown): error is TypeError {
  return error instanceof TypeError &&
    String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS_");
}

/** parseArgs in strict mode; what it refuses becomes a UsageError, its first line followed by `usage`. */
export function parseCommandLine<const T extends ParseArgsConfig>(
  config: T,
  usage: string,
): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    if (!isParseArgsError(error)) throw error;
    // Its first sentence: "Unknown option '--x'", "Option '--port <value>'
    // argument missing", "Unexpected argument 'x'".
    const what = error.message.split(/\.(?:\s|$)|\n/)[0];
    throw new UsageError(`${what}: ${usage}`);
  }
}
