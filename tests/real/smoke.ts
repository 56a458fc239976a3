/**
 * CI's check, before the tests, that the cached llama-server starts: it
 * serves a tiny model and answers `/health` within 60 s, or the last line
 * printed names the step that failed. `deno run -A tests/real/smoke.ts`
 */
import { buildDir, findBuild } from "./build.ts";
import { LlamaServer, START_TIMEOUT_MS } from "./llama_server.ts";
import { modelPath } from "./models.ts";

const encoder = new TextEncoder();
const say = (line: string) =>
  Deno.stdout.writeSync(encoder.encode(`${line}\n`));

async function smoke(): Promise<string | null> {
  const build = findBuild();
  if (build === null) {
    return `find the build": nothing complete in ${buildDir()}`;
  }
  let model: string;
  try {
    model = await modelPath(build, "shift");
  } catch (error) {
    return `write a tiny model": ${String(error)}`;
  }
  const started = performance.now();
  try {
    await using server = await LlamaServer.start({
      build,
      args: ["-m", model],
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    say(
      `llama-server: ${
        build.version.split("\n")[0]
      }, answered on ${server.url} in ${seconds} s`,
    );
    return null;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const [first, ...log] = message.split("\n");
    if (log.length > 0) say(log.join("\n"));
    return `start llama-server" (at most ${
      START_TIMEOUT_MS / 1000
    } s): ${first}`;
  }
}

const failed = await smoke();
if (failed !== null) {
  say(`llama-server failed at step "${failed}`);
  Deno.exitCode = 1;
}
