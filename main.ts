/**
 * The command line: `serve` (default), `chat`, `ask`, `export`, `web`,
 * `flags`, `web-flags`, `client-flags`, `check`, and `launch` (what `deno
 * task check|compile` run: it derives the flags and starts the real command
 * with exactly those). The first word names the command, which parses the
 * rest with `node:util` `parseArgs`. Every command returns its exit code
 * here, and the process ends at the one exit point at the bottom.
 */
import { describeError, log } from "./src/base/log.ts";
import { writeAll } from "./src/streams/write_all.ts";
import {
  readCommandLine,
  USAGE_EXIT,
  UsageError,
} from "./src/base/command_line.ts";

const USAGE = `usage: main.ts [command] [options]
  serve              run the daemon (default)
  chat [--no-think] [--raw] [--export-dir DIR]
                     interactive terminal client (--raw: replies as sent;
                     /export writes in DIR)
  ask [--think] [--json] [--yes] [--render] [--file PATH]... "question"
                     print one answer (the question from stdin when omitted;
                     --file sends a file with it)
  export ID [--json] print a conversation as Markdown (or JSON)
  web [--port N]     the browser canvas (deno task web runs it with its own grants)
  web-flags [--task] [--port N]
                     print the canvas's flags (--task: its whole command, for deno task web)
  client-flags [--task] chat|ask|export
                     print a client's flags (--task: its whole command, for deno task chat|ask|export)
  voice              the voice client: listens and speaks (deno task voice runs it with its own grants)
  voice-flags [--task]
                     print the voice client's flags (--task: its whole command, for deno task voice)
  flags [--shell|--task]
                     print the permission flags the daemon needs (--task: its
                     whole command, for deno task start)
  check              validate config and tools, probe llama-server, check the database
  launch check|compile
                     derive the flags and run that command with exactly them`;

/** Refuses any option or argument: the command takes none. */
function noOptions(command: string, args: string[]): void {
  readCommandLine(args, {
    options: {},
    usage: `usage: main.ts ${command} (it takes no options)`,
  });
}

async function main(args: string[]): Promise<number> {
  const [command = "serve", ...rest] = args;
  switch (command) {
    // Each command loads only its own modules: the clients start fast and
    // never pull in SQLite or the daemon's parts.
    case "serve":
      noOptions("serve", rest);
      return await (await import("./src/launch/daemon.ts")).serve();
    case "chat":
      return await (await import("./src/clients/chat.ts")).runChat(rest);
    case "ask":
      return await (await import("./src/clients/ask.ts")).runAsk(rest);
    case "export":
      return await (await import("./src/clients/export.ts")).runExport(rest);
    case "web":
      return await (await import("./src/web/web.ts")).runWeb(rest);
    case "web-flags":
      return await (await import("./src/launch/web_flags.ts")).printWebFlags(
        rest,
      );
    case "client-flags":
      return await (await import("./src/launch/client_flags.ts"))
        .printClientFlags(rest);
    case "voice":
      return await (await import("./src/voice/voice.ts")).runVoice(rest);
    case "voice-flags":
      return await (await import("./src/launch/voice_flags.ts"))
        .printVoiceFlags(rest);
    case "flags":
      return await (await import("./src/launch/launch.ts")).printFlags(rest);
    case "check":
      return await (await import("./src/launch/check.ts")).runCheck(rest);
    case "launch":
      return await (await import("./src/launch/launch.ts")).launch(rest);
    case "help":
    case "--help":
    case "-h":
      noOptions(command, rest);
      await writeAll(Deno.stdout, USAGE + "\n");
      return 0;
    default:
      throw new UsageError(
        `Unknown command ${JSON.stringify(command)}.\n${USAGE}`,
      );
  }
}

/** The status of a process ended by SIGPIPE, which a shell reports for `… | head -1`. */
const BROKEN_PIPE_EXIT = 128 + 13;

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (error) {
    if (error instanceof Deno.errors.BrokenPipe) {
      // Whoever read the output has gone (`main.ts --help | head -1`): there
      // is nobody to tell, and nothing went wrong here. Deno ignores SIGPIPE,
      // so this is where the quiet end that signal gives other tools happens.
      code = BROKEN_PIPE_EXIT;
    } else if (error instanceof UsageError) {
      await writeAll(Deno.stderr, `${error.message}\n`);
      code = USAGE_EXIT;
    } else {
      log.error("exit", { code: 1, error: describeError(error) });
      code = 1;
    }
  }
  Deno.exit(code);
}
