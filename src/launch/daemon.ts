/** Wires the daemon together: config, grants, store, tools, model client, brain and socket. */
import { Assistant } from "../assistant/assistant.ts";
import { loadConfig } from "../base/config.ts";
import { type Env, resolvePaths } from "../base/paths.ts";
import { AssistantError } from "../base/errors.ts";
import { BackendWatch } from "../llm/backend.ts";
import { LlmClient } from "../llm/client.ts";
import { describeError, log } from "../base/log.ts";
import { holds } from "../base/grant_query.ts";
import { missingGrants } from "../base/permissions.ts";
import { SearchWorker } from "../store/search_worker.ts";
import { encodeVector } from "../store/vector_codec.ts";
import { Embedder } from "../llm/embeddings.ts";
import { Indexer } from "../assistant/indexer.ts";
import { Meaning } from "../assistant/meaning.ts";
import { Server } from "../server/server.ts";
import { clearSocketPath } from "../server/socket_path.ts";
import { Store } from "../store/store.ts";
import { groupKillHelper } from "../tools/runner.ts";
import { convert, resolveConverters } from "../tools/convert.ts";
import { loadTools } from "../tools/load.ts";
import { planMcp } from "../tools/mcp_plan.ts";
import { within } from "../base/within.ts";
import { VERSION } from "../base/version.ts";

/** Injected parts of the daemon; the real ones by default. */
export interface DaemonOptions {
  env?: Env;
  fetch?: typeof fetch;
  /** Resolves when the daemon should stop; default: SIGTERM or SIGINT. */
  stop?: Promise<string>;
}

/** Resolves on SIGTERM or SIGINT with the signal's name; disposing removes the listeners. */
function signals(): { promise: Promise<string> } & Disposable {
  const { promise, resolve } = Promise.withResolvers<string>();
  const handlers = (["SIGTERM", "SIGINT"] as const).map((name) => {
    const handler = () => resolve(name);
    Deno.addSignalListener(name, handler);
    return [name, handler] as const;
  });
  return {
    promise,
    [Symbol.dispose]: () =>
      handlers.forEach(([name, handler]) =>
        Deno.removeSignalListener(name, handler)
      ),
  };
}

/**
 * Logs an unhandled rejection or an uncaught error and keeps the daemon up:
 * a fault in one part must not end every client's session.
 */
function survivingFaults(): Disposable {
  const onRejection = (event: PromiseRejectionEvent) => {
    event.preventDefault();
    log.error("unhandled rejection", { error: describeError(event.reason) });
  };
  const onError = (event: ErrorEvent) => {
    event.preventDefault();
    log.error("uncaught error", {
      error: describeError(event.error ?? event.message),
    });
  };
  globalThis.addEventListener("unhandledrejection", onRejection);
  globalThis.addEventListener("error", onError);
  return {
    [Symbol.dispose]: () => {
      globalThis.removeEventListener("unhandledrejection", onRejection);
      globalThis.removeEventListener("error", onError);
    },
  };
}

/** How long the start waits for the MCP servers before it listens. */
const MCP_START_WAIT_MS = 10_000;

/** How long shutdown waits for a stopped reply (and a tool being killed) to wind down. */
const SETTLE_MS = 5000;

/** How long the socket waits for the first probe, so a client's `hello` rarely says `unknown`. */
const FIRST_PROBE_MS = 1000;

/** How long shutdown waits for the search worker to close its connection before it ends the worker. */
const WORKER_CLOSE_MS = 2000;

/** Closes the search worker within a bound: one busy past it is ended. */
async function closeWorker(worker: SearchWorker | null): Promise<void> {
  if (worker === null) return;
  if (!await within(worker.close(), WORKER_CLOSE_MS)) {
    log.warn("search worker still busy at exit: ended", {
      ms: WORKER_CLOSE_MS,
    });
    worker.terminate();
  }
}

/** Runs the daemon until a signal; resolves to the exit code. */
export async function serve(options: DaemonOptions = {}): Promise<number> {
  // Both first, so a signal or a fault during start-up is handled as later.
  using stopSignals = options.stop ? null : signals();
  using _faults = survivingFaults();
  if (!options.env && !holds("env", "XDG_RUNTIME_DIR")) {
    // No grant at all: the flags never came (deno task start's derivation
    // failed, and said why above), rather than one being too narrow.
    throw new AssistantError(
      "Started without its permission flags: start the daemon with deno task start or assistant.sh start, which derive them (main.ts flags prints them)",
    );
  }
  const paths = resolvePaths(options.env);
  const { config, warnings, file } = await loadConfig(paths);
  for (const warning of warnings) log.warn(warning);
  const mcpPlan = planMcp(config, paths.configDir);
  const missing = [...missingGrants({ paths, config }), ...mcpPlan.missing];
  if (missing.length > 0) {
    throw new AssistantError(
      `Started without ${
        missing.join(" ")
      }: run the daemon with the flags from \`main.ts flags\` (deno task start does)`,
    );
  }
  const toolKillHelper = config.tool_group_kill ? groupKillHelper() : null;
  if (config.tool_group_kill && toolKillHelper === null) {
    throw new AssistantError(
      "tool_group_kill = true needs coreutils timeout on PATH and --allow-run for it: run the daemon with the flags from `main.ts flags`, or set tool_group_kill = false",
    );
  }
  // A live daemon on the socket makes this one refuse before it touches the
  // history the other one owns.
  await clearSocketPath(paths.socketPath);
  // The store's upkeep and the backend's polls wait for a pause in the
  // replies; the brain that knows of them is made below.
  let replying = () => false;
  let server: Server | null = null;
  using backend = new BackendWatch({
    url: config.llm_url,
    model: config.model,
    pollMs: config.backend_poll * 1000,
    emit: (view) => server?.broadcast({ type: "backend", ...view }),
    busy: () => replying(),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  // The first probe runs while the tools, the MCP servers and the history
  // are opened.
  const firstProbe = backend.probe();
  const { tools, skipped } = await loadTools(config.tools_dirs);
  for (const { name, reason } of mcpPlan.leftOut) {
    log.warn("mcp server left out", { server: name, reason });
  }
  // The MCP client library takes about 0.4 s and 20 MB to load: only a
  // config that names servers pays for it.
  await using mcp = mcpPlan.servers.length === 0
    ? null
    : new (await import("../tools/mcp.ts")).McpHub(mcpPlan.servers, {
      defaultTimeout: config.tool_timeout,
      outputLimit: config.tool_output_limit,
      version: VERSION,
      cwd: paths.configDir,
    });
  // A server slower than this joins once it is up; the socket need not wait.
  if (mcp) await within(mcp.start(), MCP_START_WAIT_MS);
  using store = new Store(paths.dbPath, { busy: () => replying() });
  // The worker (a second isolate loading node:sqlite) starts once the socket
  // listens, so it does not compete with start-up; a search before then
  // starts it itself.
  let worker: SearchWorker | null = null;
  await using _worker = {
    [Symbol.asyncDispose]: () => closeWorker(worker),
  };
  const meaningOn = config.embed_url !== "";
  const searchWorker = () =>
    worker ??= new SearchWorker(paths.dbPath, { vectors: meaningOn });
  const searcher = {
    search: (q: string, limit: number) => searchWorker().search(q, limit),
  };
  // Search by meaning: the turns' vectors made in the background, searched
  // on the worker beside the words.
  const embedder = meaningOn
    ? new Embedder({
      url: config.embed_url,
      model: config.embed_model,
      stallMs: config.stall_timeout * 1000,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    })
    : null;
  using indexer = embedder && new Indexer({
    embedder,
    vectors: store.vectors,
    encode: encodeVector,
    busy: () => replying(),
    publish: (event) => server?.broadcast(event),
    retryMs: (config.backend_poll || 30) * 1000,
    // The worker catches up with a backlog's vectors while nobody searches.
    done: () => worker?.refreshVectors(),
    // A saved turn's id may be one the worker knows from a turn deleted or
    // replaced: it reads the turn again.
    wrote: (turns) => worker?.refreshTurns(turns),
  });
  const meaningStop = new AbortController();
  const llm = new LlmClient({
    url: config.llm_url,
    model: config.model,
    stallMs: config.stall_timeout * 1000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    observer: backend,
  });
  backend.onLost(() => llm.forgetProps());
  const converters = resolveConverters(config, paths.configDir);
  using assistant = new Assistant({
    store,
    llm,
    config,
    tools,
    toolKillHelper,
    reading: {
      converts: (mime) => converters.has(mime),
      convert: (mime, name, bytes, signal) =>
        convert(converters.get(mime)!, name, bytes, {
          seconds: config.tool_timeout,
          signal,
          helper: toolKillHelper,
        }),
    },
    mcp,
    confirm: {
      tools: config.confirm_tools,
      timeoutSeconds: config.confirm_timeout,
    },
    searcher,
    indexer,
    meaning: embedder && new Meaning({
      embedder,
      nearest: (query, model, limit, exclude) =>
        searchWorker().nearest(query, model, limit, exclude),
      signal: meaningStop.signal,
      // Known down: a search by both ways answers by words at once.
      down: () => indexer?.up === false,
    }),
    version: VERSION,
    emit: (event) => server?.broadcast(event),
    backend: () => backend.view,
  });
  replying = () => assistant.replying;
  await within(firstProbe, FIRST_PROBE_MS);
  await using listening = await Server.listen({
    path: paths.socketPath,
    brain: assistant,
    maxClients: config.max_clients,
    onClients: (count) => backend.clients(count),
  });
  server = listening;
  worker = searchWorker();
  // A backlog (a history from before, a new model) starts at once.
  indexer?.kick();
  log.info("listening", {
    socket: paths.socketPath,
    pid: Deno.pid,
    version: VERSION,
    config: file ?? "defaults",
    tools: tools.length,
    skipped: skipped.length,
    mcp_servers: mcpPlan.servers.length,
    mcp_tools: mcp?.tools().length ?? 0,
  });
  const reason = await (options.stop ?? stopSignals!.promise);
  log.info("stopping", { reason });
  // The reply in flight ends first, so its `done {stopped: true}` is queued
  // for every client before the server closes them.
  assistant.shutdown();
  meaningStop.abort();
  await listening.close();
  if (!await within(assistant.settled(), SETTLE_MS)) {
    log.warn("reply still winding down at exit", { ms: SETTLE_MS });
  }
  await closeWorker(worker);
  worker = null;
  store.close();
  log.info("exit", { code: 0, reason });
  return 0;
}
