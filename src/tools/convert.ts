/**
 * Document converters (config `[convert]`): a file sent with a question
 * whose type has one is run through it, its bytes on stdin and its text on
 * stdout, by the same bounded run as a tool (time limit, output cap, its
 * own `--allow-run` entry, derived like a tool's). A converter whose
 * program is not found is left out, so the default `pdftotext` costs
 * nothing where it is not installed.
 */
import { AssistantError, loggedName } from "../base/errors.ts";
import type { Config } from "../base/config.ts";
import { log } from "../base/log.ts";
import { boundedRun } from "./bounded_run.ts";
import {
  canRunExecutable,
  processPath,
  resolveExecutable,
} from "./executable.ts";

/** Most bytes of text a conversion may give: more would not fit any context. */
export const CONVERTED_LIMIT = 8 * 1024 * 1024;

/** One converter, its program resolved. */
export interface Converter {
  mime: string;
  executable: string;
  args: string[];
  /** Where it runs: the config dir, against which a relative program was resolved. */
  cwd: string;
}

/** Where to find programs, and whether one may be run. */
export interface ConvertResolveOptions {
  pathEnv?: string;
  canRun?: (executable: string) => boolean;
}

/** The config's converters whose program is found, by mime type (lower case). */
export function resolveConverters(
  config: Pick<Config, "convert">,
  configDir: string,
  options: ConvertResolveOptions = {},
): Map<string, Converter> {
  const pathEnv = options.pathEnv ?? processPath();
  const converters = new Map<string, Converter>();
  for (const [type, argv] of Object.entries(config.convert)) {
    const [program, ...args] = argv;
    if (program === undefined) continue;
    const executable = resolveExecutable(
      program,
      configDir,
      pathEnv,
      options.canRun ?? canRunExecutable,
    );
    if (executable === null) {
      log.info("converter left out: its program is not found", {
        mime: type,
        program: program.includes("/") ? "(a path)" : program,
      });
      continue;
    }
    const mime = type.trim().toLowerCase();
    converters.set(mime, { mime, executable, args, cwd: configDir });
  }
  return converters;
}

/** The converters' executables, for `--allow-run`. */
export function converterExecutables(
  config: Pick<Config, "convert">,
  configDir: string,
  options: ConvertResolveOptions = {},
): string[] {
  return [
    ...resolveConverters(config, configDir, {
      canRun: () => true,
      ...options,
    }).values(),
  ].map((converter) => converter.executable);
}

/** The bounds of a conversion. */
export interface ConvertOptions {
  /** Seconds before the converter is killed (`tool_timeout`). */
  seconds: number;
  signal?: AbortSignal;
  /** Coreutils `timeout`, to kill its whole process group; null kills the converter alone. */
  helper: string | null;
}

/** The text of a file, as its converter writes it; AssistantError `convert_failed` naming the file and what went wrong. */
export async function convert(
  converter: Converter,
  name: string,
  bytes: Uint8Array,
  options: ConvertOptions,
): Promise<string> {
  const fail = (why: string, cause?: unknown) =>
    new AssistantError(`${name}: its converter ${why}`, {
      code: "convert_failed",
      forLog: `${loggedName(name)}: its converter ${why}`,
      ...(cause === undefined ? {} : { cause }),
    });
  const started = performance.now();
  let run;
  try {
    run = await boundedRun({
      executable: converter.executable,
      args: converter.args,
      cwd: converter.cwd,
      stdin: bytes,
      seconds: options.seconds,
      outputLimit: CONVERTED_LIMIT,
      ...(options.signal ? { signal: options.signal } : {}),
      helper: options.helper,
    });
  } catch (error) {
    throw fail("could not be started", error);
  }
  const { status, reason, stdout } = run;
  log.info("file converted", {
    mime: converter.mime,
    bytes: bytes.length,
    text_bytes: stdout.bytes,
    status: reason ?? (status.signal ? `signal ${status.signal}` : status.code),
    ms: Math.round(performance.now() - started),
  });
  if (reason === "timeout") {
    throw fail(`took longer than ${options.seconds} s and was stopped`);
  }
  if (reason === "stopped") throw fail("was stopped");
  if (status.signal !== null) throw fail(`was ended by ${status.signal}`);
  if (status.code !== 0) throw fail(`failed with exit status ${status.code}`);
  if (stdout.bytes > CONVERTED_LIMIT) {
    throw fail(`wrote more than ${CONVERTED_LIMIT / 1024 / 1024} MiB of text`);
  }
  const text = stdout.text().trim();
  if (text === "") throw fail("gave no text");
  return text;
}
