/**
 * The command line: `serve` (default), `chat`, `ask`, `flags`, `check`, and
 * `launch` (what `deno task start|check|compile` run: it derives the flags and
 * starts the real command with exactly those). Every command returns its exit
 * code here, and the process ends at the one exit point at the bottom.
 */
import { runAsk } from "./src/ask.ts";
import { runChat } from "./src/chat.ts";
import { runCheck } from "./src/check.ts";
import { serve } from "./src/daemon.ts";
import { launch, printFlags } from "./src/launch.ts";
import { describeError, log } from "./src/log.ts";

const USAGE = `usage: main.ts [command] [options]
  serve              run the daemon (default)
  chat [--no-think]  interactive terminal client
  ask [--think] [--json] "question"
                     print one answer (the question from stdin when omitted)
  flags [--shell]    print the permission flags the daemon needs
  check              validate config and tools, probe llama-server, check the database
  launch [serve|check|compile]
                     derive the flags and run that command with exactly them`;

async function main(args: string[]): Promise<number> {
  const [command = "serve", ...rest] = args;
  switch (command) {
    case "serve":
      return await serve();
    case "chat":
      return await runChat(rest);
    case "ask":
      return await runAsk(rest);
    case "flags":
      return await printFlags(rest);
    case "check":
      return await runCheck(rest);
    case "launch":
      return await launch(rest);
    case "help":
    case "--help":
    case "-h":
      await write(Deno.stdout, USAGE + "\n");
      return 0;
    default:
      await write(
        Deno.stderr,
        `Unknown command ${JSON.stringify(command)}.\n${USAGE}\n`,
      );
      return 64;
  }
}

async function write(
  to: { write(p: Uint8Array): Promise<number> },
  text: string,
) {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  while (offset < bytes.length) {
    offset += await to.write(bytes.subarray(offset));
  }
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (error) {
    log.error("exit", { code: 1, error: describeError(error) });
    code = 1;
  }
  Deno.exit(code);
}
