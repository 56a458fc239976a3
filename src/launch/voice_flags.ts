/**
 * `main.ts voice-flags [--task]`: the voice client's grants for the config's
 * voice keys. `deno task voice` runs `deno run … $(main.ts voice-flags
 * --task)`, so the client starts with exactly its grants and nothing stays
 * resident beside `deno task`: `--task` prints the whole rest of that
 * command line (the flags, `main.ts`, `voice`), one word per line.
 */
import { MAIN_MODULE, taskWords } from "./launch.ts";
import { type Env, readEnv, resolvePaths } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { setQuiet } from "../base/log.ts";
import { writeAll } from "../streams/write_all.ts";
import { processPath, resolveExecutable } from "../tools/executable.ts";
import { voiceFlags, voiceGrantInput } from "../voice/grants.ts";
import { loadVoiceSettings } from "../voice/settings.ts";

const USAGE = "usage: main.ts voice-flags [--task]";

/** Options of {@link voiceCommandWords}, for tests. */
export interface VoiceFlagOptions {
  env?: Env;
  /** PATH for bare command names; default the process PATH. */
  pathEnv?: string;
}

/** The words after `deno run --quiet --no-prompt` that start the voice client: its flags, then `main.ts voice`. AssistantError naming the key of a command that is not installed. */
export async function voiceCommandWords(
  options: VoiceFlagOptions = {},
): Promise<string[]> {
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
          }, or not executable): install it, or change ${key} in ${paths.configFile} (an empty list turns that part off)`,
        );
      }
      return found;
    },
  );
  return [...voiceFlags(input), MAIN_MODULE, "voice"];
}

/** `main.ts voice-flags [--task]`: the voice client's flags, or with `--task` its whole command; resolves to the exit code. */
export async function printVoiceFlags(args: string[]): Promise<number> {
  const unknown = args.find((arg) => arg !== "--task");
  if (unknown !== undefined) {
    await writeAll(Deno.stderr, `Unknown argument ${unknown}: ${USAGE}\n`);
    return 64;
  }
  setQuiet(true);
  try {
    const words = await voiceCommandWords();
    const shown = args.includes("--task")
      ? taskWords(words)
      : words.slice(0, -2);
    await writeAll(Deno.stdout, shown.map((word) => word + "\n").join(""));
    return 0;
  } catch (error) {
    const known = error instanceof AssistantError ||
      error instanceof SyntaxError || error instanceof TypeError;
    if (!known) throw error;
    // A failed substitution leaves `deno run` without a script: say why here.
    await writeAll(Deno.stderr, `${error.message}\n`);
    return 1;
  }
}
