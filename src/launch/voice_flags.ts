/**
 * `main.ts voice-flags [--task]`: the voice client's grants for the config's
 * voice keys. `deno task voice` runs the line `--task` prints
 * (task_command.ts): `deno run` locked to deno.lock, `--quiet --no-prompt`,
 * the flags, this module's `main.ts`, `voice`, so the client starts with
 * exactly its grants and nothing stays resident beside `deno task`.
 */
import { MAIN_MODULE } from "./launch.ts";
import {
  failureText,
  LOCKED,
  printTaskCommand,
  taskCommand,
} from "./task_command.ts";
import { readCommandLine } from "../base/command_line.ts";
import { type Env, type Paths, readEnv, resolvePaths } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { processPath, resolveExecutable } from "../tools/executable.ts";
import { voiceFlags, voiceGrantInput } from "../voice/grants.ts";
import { loadVoiceSettings } from "../voice/settings.ts";

const USAGE = "usage: main.ts voice-flags [--task]";

/** The voice client's own part of the command. */
const CLIENT_WORDS: readonly string[] = [MAIN_MODULE, "voice"];

/** Options of {@link voiceGrants}, for tests. */
export interface VoiceFlagOptions {
  env?: Env;
  /** PATH for bare command names; default the process PATH. */
  pathEnv?: string;
}

/** The voice client's flags and the paths they were derived from. AssistantError naming the key of a command that is not installed. */
export async function voiceGrants(
  options: VoiceFlagOptions = {},
): Promise<{ paths: Paths; flags: string[] }> {
  const env = options.env ?? readEnv;
  const paths = resolvePaths(env);
  const settings = await loadVoiceSettings(paths, env);
  const pathEnv = options.pathEnv ?? processPath();
  const input = voiceGrantInput(
    settings,
    { socketPath: paths.socketPath, configFile: paths.configFile },
    (key, command0) => {
      // Flags can grant only a file that exists: a missing one is named now.
      const found = resolveExecutable(command0, paths.configDir, pathEnv);
      if (found === null) {
        throw new AssistantError(
          `${key}: ${command0} is not installed (not found${
            command0.includes("/") ? "" : " on PATH"
          }, or not executable): install it, or change ${key} in ${paths.configFile}`,
        );
      }
      return found;
    },
  );
  return { paths, flags: voiceFlags(input) };
}

/** `main.ts voice-flags [--task]`: the voice client's flags, or with `--task` its whole command; resolves to the exit code. */
export async function printVoiceFlags(args: string[]): Promise<number> {
  const { values } = readCommandLine(args, {
    options: { task: { type: "boolean" } },
    usage: USAGE,
  });
  setQuiet(true);
  if (values.task) {
    return await printTaskCommand({
      task: "voice",
      instead: "run main.ts voice with the flags main.ts voice-flags prints",
      words: async () => {
        const { paths, flags } = await voiceGrants();
        return taskCommand(
          [
            "run",
            ...LOCKED,
            "--quiet",
            "--no-prompt",
            ...flags,
            ...CLIENT_WORDS,
          ],
          paths.runtimeDir,
        );
      },
    });
  }
  let flags: string[];
  try {
    ({ flags } = await voiceGrants());
  } catch (error) {
    const reason = failureText(error);
    if (reason === null) throw error;
    await writeAll(Deno.stderr, reason);
    return 1;
  }
  await writeAll(Deno.stdout, flags.map((flag) => `${flag}\n`).join(""));
  return 0;
}
