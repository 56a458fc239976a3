/**
 * One MCP server's life: its process over stdio, the client's handshake,
 * the tools it lists (as `NAME__tool`), a list that changes, and the
 * restarts with a growing pause when it does not start or dies.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  ErrorCode,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { describeError, log } from "../base/log.ts";
import type { McpServerConfig } from "../base/mcp_config.ts";
import { NAME_PATTERN } from "./load.ts";
import { callTool, codeOf, messageOf } from "./mcp_call.ts";
import type { PlannedServer } from "./mcp_plan.ts";
import { ProcessTransport } from "./mcp_transport.ts";
import { within } from "../base/within.ts";
import type { ToolOutcome } from "./runner.ts";

/** One tool a server offers, under the name the model calls it by. */
export interface McpTool {
  /** `SERVER__tool`. */
  name: string;
  /** The name the server knows it by. */
  remote: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** What a server is doing. */
export type McpStatus =
  | { state: "starting" }
  | { state: "ready"; tools: McpTool[] }
  | { state: "failed"; reason: string; retryMs: number | null };

/** Settings shared by every server. */
export interface McpSettings {
  /** Seconds per request when the server's table sets no `timeout`. */
  defaultTimeout: number;
  /** Bytes of a result's text given to the model. */
  outputLimit: number;
  /** The daemon's version, sent in `initialize`. */
  version: string;
  /** The working directory of the servers (the config dir). */
  cwd: string;
  /** First pause before a restart, doubled after each failure; default 1 s. */
  restartMs?: number;
  /** Longest pause before a restart; default 60 s. */
  maxRestartMs?: number;
  /** False starts each server once, without restarts (`main.ts check`). */
  restart?: boolean;
}

/** The least time a server gets to answer its handshake and list its tools. */
const MIN_START_SECONDS = 60;
/** A server that stayed up this long starts its next restart from the first pause again. */
const STABLE_MS = 60_000;
/** How long a failed server's stderr is still read (a child it left may hold the pipe). */
const STDERR_WAIT_MS = 1000;
/** Bytes of stderr quoted when a server fails before it is ready. */
const STDERR_QUOTE = 400;

/** How a server process ended, in words. */
function exitWords(status: Deno.CommandStatus | null): string {
  return status === null
    ? "it closed its output"
    : status.signal !== null
    ? `it was ended by ${status.signal}`
    : `it exited with status ${status.code}`;
}

/** One MCP server: its process, its client, its tools and its restarts. */
export class McpServer implements AsyncDisposable {
  readonly name: string;
  readonly config: McpServerConfig;
  readonly executable: string;
  readonly #settings: McpSettings;
  #status: McpStatus = { state: "starting" };
  #client: Client | null = null;
  #transport: ProcessTransport | null = null;
  #failures = 0;
  #readyAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #settled = Promise.withResolvers<void>();
  #onChange: () => void;

  /** Prepares the server; `start` runs it. */
  constructor(
    planned: PlannedServer,
    settings: McpSettings,
    onChange: () => void = () => {},
  ) {
    this.name = planned.name;
    this.config = planned.config;
    this.executable = planned.executable;
    this.#settings = settings;
    this.#onChange = onChange;
  }

  /** What the server is doing now. */
  get status(): McpStatus {
    return this.#status;
  }

  /** Seconds for one request to this server. */
  get timeout(): number {
    return this.config.timeout ?? this.#settings.defaultTimeout;
  }

  /** Seconds for the handshake and the tool list: a first `npx` run downloads the server before it can answer. */
  get #startSeconds(): number {
    return Math.max(this.timeout, MIN_START_SECONDS);
  }

  /** Resolves once the first start has succeeded or failed. */
  get settled(): Promise<void> {
    return this.#settled.promise;
  }

  /** Starts the server (and, on failure, its restarts); never throws. */
  start(): Promise<void> {
    void this.#connect();
    return this.settled;
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    this.#setStatus({ state: "starting" });
    const started = performance.now();
    const transport = new ProcessTransport({
      executable: this.executable,
      args: this.config.command.slice(1),
      env: this.config.env,
      cwd: this.#settings.cwd,
    });
    const client = new Client({
      name: "desktop-assistant",
      version: this.#settings.version,
    });
    const timeout = this.#startSeconds * 1000;
    let ready = false;
    transport.onerror = (error) => {
      log.debug("mcp server stream error", {
        server: this.name,
        error: describeError(error),
      });
    };
    // Held from the start, so a dispose during the handshake ends it too.
    this.#client = client;
    this.#transport = transport;
    try {
      await client.connect(transport, { timeout });
      client.onclose = () => this.#lost(transport, ready);
      const tools = await this.#listTools(client, timeout);
      if (this.#closed) return;
      client.setNotificationHandler(
        ToolListChangedNotificationSchema,
        () => void this.#refresh(client),
      );
      ready = true;
      this.#readyAt = performance.now();
      this.#setStatus({ state: "ready", tools });
      log.info("mcp server ready", {
        server: this.name,
        tools: tools.length,
        ms: Math.round(performance.now() - started),
      });
    } catch (error) {
      if (this.#transport === transport) {
        this.#client = null;
        this.#transport = null;
      }
      await client.close().catch(() => {});
      await transport.close().catch(() => {});
      if (!this.#closed) this.#fail(await this.#reason(error, transport));
    } finally {
      this.#settled.resolve();
    }
  }

  async #listTools(client: Client, timeout: number): Promise<McpTool[]> {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(
        cursor === undefined ? undefined : { cursor },
        { timeout },
      );
      for (const tool of page.tools) {
        const name = `${this.name}__${tool.name}`;
        if (!NAME_PATTERN.test(name)) {
          log.warn("mcp tool left out", {
            server: this.name,
            reason:
              `its name as offered (${name.length} characters) is not ${NAME_PATTERN.source}`,
          });
          continue;
        }
        tools.push({
          name,
          remote: tool.name,
          description: tool.description ?? tool.title ?? "",
          inputSchema: tool.inputSchema as Record<string, unknown>,
        });
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined && tools.length < 1000);
    return tools;
  }

  async #refresh(client: Client): Promise<void> {
    try {
      const tools = await this.#listTools(client, this.timeout * 1000);
      if (this.#client !== client || this.#closed) return;
      this.#setStatus({ state: "ready", tools });
      log.info("mcp tools changed", { server: this.name, tools: tools.length });
    } catch (error) {
      log.warn("mcp tools list failed", {
        server: this.name,
        error: describeError(error),
      });
    }
  }

  async #reason(error: unknown, transport: ProcessTransport): Promise<string> {
    let reason: string;
    if (error instanceof Deno.errors.NotFound) {
      reason = `${this.executable} was not found`;
    } else if (codeOf(error) === ErrorCode.RequestTimeout) {
      reason = `no answer within ${this.#startSeconds} s`;
    } else if (codeOf(error) === ErrorCode.ConnectionClosed) {
      reason = `${exitWords(await transport.exited)} before it was ready`;
    } else {
      reason = messageOf(error);
    }
    // Before it is ready no call has reached it: its stderr says nothing of the user's.
    await within(transport.drained, STDERR_WAIT_MS);
    const stderr = transport.stderr.text().trim();
    if (stderr !== "") {
      const tail = stderr.length > STDERR_QUOTE
        ? `…${stderr.slice(-STDERR_QUOTE)}`
        : stderr;
      reason += ` (stderr: ${tail.replace(/\s*\n\s*/g, " | ")})`;
    }
    return reason;
  }

  #lost(transport: ProcessTransport, wasReady: boolean): void {
    // Before it was ready, the handshake's own failure reports it.
    if (!wasReady || this.#closed || this.#transport !== transport) return;
    this.#client = null;
    this.#transport = null;
    if (performance.now() - this.#readyAt >= STABLE_MS) this.#failures = 0;
    void (async () => {
      const how = exitWords(await transport.exited);
      if (!this.#closed) this.#fail(how);
    })();
  }

  #fail(reason: string): void {
    const restart = this.#settings.restart ?? true;
    const first = this.#settings.restartMs ?? 1000;
    const retryMs = restart
      ? Math.min(
        first * 2 ** this.#failures,
        this.#settings.maxRestartMs ?? 60_000,
      )
      : null;
    this.#failures++;
    this.#setStatus({ state: "failed", reason, retryMs });
    log.warn("mcp server down", {
      server: this.name,
      reason,
      ...(retryMs === null ? {} : { retry_ms: retryMs }),
    });
    if (retryMs !== null) {
      this.#timer = setTimeout(() => void this.#connect(), retryMs);
    }
  }

  #setStatus(status: McpStatus): void {
    this.#status = status;
    this.#onChange();
  }

  /** Runs one call through `tools/call`; never throws. */
  async call(
    tool: McpTool,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
  ): Promise<Omit<ToolOutcome, "durationMs">> {
    const client = this.#client;
    if (client === null || this.#status.state !== "ready") {
      return {
        bytes: 0,
        lines: 0,
        content:
          `The tool ${tool.name} did not run: its MCP server ${this.name} is not running (it is being restarted).`,
        status: "server down",
      };
    }
    return await callTool(client, tool, args, {
      server: this.name,
      timeout: this.timeout,
      outputLimit: this.#settings.outputLimit,
      signal,
    });
  }

  /** Stops restarts and ends the server. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    const client = this.#client;
    const transport = this.#transport;
    this.#client = null;
    this.#transport = null;
    await client?.close().catch(() => {});
    await transport?.close().catch(() => {});
    this.#settled.resolve();
  }
}
