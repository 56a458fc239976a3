/** Wires the daemon together: config, grants, store, tools, model client, brain and socket. */
import { Assistant } from "./assistant.ts";
import { type Env, loadConfig, resolvePaths } from "./config.ts";
import { AssistantError } from "./errors.ts";
import { LlmClient } from "./llm.ts";
import { log } from "./log.ts";
import { missingGrants } from "./permissions.ts";
import { SearchWorker } from "./search_worker.ts";
import { Server } from "./server.ts";
import { Store } from "./store.ts";
import { loadTools } from "./tools.ts";
import { VERSION } from "./version.ts";

/** Injected parts of the daemon; the real ones by default. */
export interface DaemonOptions {
  env?: Env;
  fetch?: typeof fetch;
  /** Resolves when the daemon should stop; default: SIGTERM or SIGINT. */
  stop?: Promise<string>;
}

function signals(): { promise: Promise<string>; dispose: () => void } {
  const { promise, resolve } = Promise.withResolvers<string>();
  const handlers = (["SIGTERM", "SIGINT"] as const).map((name) => {
    const handler = () => resolve(name);
    Deno.addSignalListener(name, handler);
    return [name, handler] as const;
  });
  return {
    promise,
    dispose: () =>
      handlers.forEach(([name, handler]) =>
        Deno.removeSignalListener(name, handler)
      ),
  };
}

/** Runs the daemon until a signal; resolves to the exit code. */
export async function serve(options: DaemonOptions = {}): Promise<number> {
  const paths = resolvePaths(options.env);
  const { config, warnings, file } = await loadConfig(paths);
  for (const warning of warnings) log.warn(warning);
  const missing = missingGrants({ paths, config });
  if (missing.length > 0) {
    throw new AssistantError(
      `Started without ${
        missing.join(" ")
      }: run the daemon with the flags from \`main.ts flags\` (deno task start does)`,
    );
  }
  const { tools, skipped } = await loadTools(config.tools_dirs);
  using store = new Store(paths.dbPath);
  await using searcher = new SearchWorker(paths.dbPath);
  const llm = new LlmClient({
    url: config.llm_url,
    model: config.model,
    stallMs: config.stall_timeout * 1000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  let server: Server | null = null;
  using assistant = new Assistant({
    store,
    llm,
    config,
    tools,
    searcher,
    version: VERSION,
    emit: (event) => server?.broadcast(event),
  });
  const stopSignals = options.stop ? null : signals();
  try {
    await using listening = await Server.listen({
      path: paths.socketPath,
      brain: assistant,
      maxClients: config.max_clients,
    });
    server = listening;
    log.info("listening", {
      socket: paths.socketPath,
      pid: Deno.pid,
      version: VERSION,
      config: file ?? "defaults",
      tools: tools.length,
      skipped: skipped.length,
    });
    const reason = await (options.stop ?? stopSignals!.promise);
    log.info("stopping", { reason });
    assistant.shutdown();
    await listening.close();
  } finally {
    stopSignals?.dispose();
  }
  log.info("exit", { code: 0 });
  return 0;
}
