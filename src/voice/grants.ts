/**
 * The voice client's grants, listed once for `voice-flags` and for its own
 * check at start: the daemon's socket, the config file, the commands its
 * config runs and the servers it reaches. None of the daemon's.
 */
import { holds, type Kind, netHost } from "../base/grant_query.ts";
import { AssistantError } from "../base/errors.ts";
import { commandsInUse, urlsInUse, type VoiceSettings } from "./settings.ts";

/** The environment variables the voice client reads: those that locate the socket and the config file. */
export const VOICE_ENV_VARS: readonly string[] = Object.freeze([
  "HOME",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_RUNTIME_DIR",
  "XDG_STATE_HOME",
]);

/** What the voice client's grants are derived from. */
export interface VoiceGrantInput {
  socketPath: string;
  configFile: string;
  /** The executables of the commands in use, as `--allow-run` names them. */
  executables: string[];
  /** The `host:port` of each server in use. */
  hosts: string[];
}

function listable(value: string, what: string): string {
  if (value.includes(",")) {
    throw new AssistantError(
      `The ${what} ${value} contains a comma, which a Deno permission list cannot express: move or rename it`,
    );
  }
  return value;
}

/** The grants, each kind with its values in flag order. */
function voiceGrants(input: VoiceGrantInput): [Kind, string[]][] {
  const socket = listable(input.socketPath, "socket path");
  const config = listable(input.configFile, "config file");
  const executables = input.executables.map((exe) => listable(exe, "command"));
  return [
    ["net", [`unix:${socket}`, ...new Set(input.hosts)]],
    ["read", [socket, config]],
    ["write", [socket]],
    ["run", [...new Set(executables)]],
    ["env", [...VOICE_ENV_VARS]],
  ];
}

/** The voice client's deno flags (a kind with nothing to grant is left out). */
export function voiceFlags(input: VoiceGrantInput): string[] {
  return voiceGrants(input)
    .filter(([, values]) => values.length > 0)
    .map(([kind, values]) => `--allow-${kind}=${values.join(",")}`);
}

/** The flags among {@link voiceFlags} this process lacks, one value each. */
export function missingVoiceGrants(input: VoiceGrantInput): string[] {
  return voiceGrants(input).flatMap(([kind, values]) =>
    values.filter((value) => !holds(kind, value)).map((value) =>
      `--allow-${kind}=${value}`
    )
  );
}

/** The grant input for these settings, each command's executable given by `resolve` (which throws naming the key when it finds none). */
export function voiceGrantInput(
  settings: VoiceSettings,
  where: { socketPath: string; configFile: string },
  resolve: (key: string, command0: string) => string,
): VoiceGrantInput {
  return {
    ...where,
    executables: commandsInUse(settings).map(({ key, argv }) =>
      resolve(key, argv[0]!)
    ),
    hosts: urlsInUse(settings).map(({ url }) => netHost(url)),
  };
}
