/**
 * The browser canvas's HTTP side: one loopback listener that serves the
 * page's files and upgrades `/TOKEN/ws` to a WebSocket bridged to the
 * daemon. Every request passes the access check first; a refusal is a bare
 * 403 that tells nothing about the canvas.
 */
import { type AccessRules, checkAccess, newToken } from "./access.ts";
import { Bridge, type BridgeOptions } from "./bridge.ts";
import {
  loadStaticFiles,
  securityHeaders,
  type StaticFile,
} from "./static_files.ts";
import { AssistantError } from "../base/errors.ts";
import { describeError, log } from "../base/log.ts";

/** The only address the canvas listens on. */
export const WEB_HOST = "127.0.0.1";

/** Options of {@link WebServer.start}. */
export interface WebServerOptions {
  /** Port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** The daemon's socket. */
  socketPath: string;
  /** The page's files; default read from `web/`. */
  files?: Map<string, StaticFile>;
  /** The token; default a fresh random one. */
  token?: string;
  /** Opens the daemon's socket; default Deno.connect. */
  connect?: BridgeOptions["connect"];
  /** Most pages connected at once; more are refused with 503. */
  maxPages?: number;
}

const DEFAULT_MAX_PAGES = 64;

const FORBIDDEN =
  "Forbidden: open the address that deno task web printed, token included.\n";

function answer(
  status: number,
  body: string | Uint8Array<ArrayBuffer> | null,
  headers: Record<string, string> = {},
): Response {
  return new Response(body, {
    status,
    headers: {
      ...securityHeaders(),
      ...(typeof body === "string"
        ? { "Content-Type": "text/plain; charset=utf-8" }
        : {}),
      ...headers,
    },
  });
}

/** The running canvas: its address and token, its bridges; `await using` closes all. */
export class WebServer implements AsyncDisposable {
  /** The port it listens on (the real one when 0 was asked). */
  readonly port: number;
  /** The random token every request must carry. */
  readonly token: string;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #closing = new AbortController();
  readonly #bridges = new Set<Bridge>();
  readonly #files: Map<string, StaticFile>;
  readonly #options: WebServerOptions;
  #rules: AccessRules;

  private constructor(
    options: WebServerOptions,
    files: Map<string, StaticFile>,
  ) {
    this.#options = options;
    this.#files = files;
    this.token = options.token ?? newToken();
    // Filled in once the port is known; nothing is served before that.
    this.#rules = { token: this.token, host: "" };
    try {
      this.#server = Deno.serve({
        hostname: WEB_HOST,
        port: options.port,
        signal: this.#closing.signal,
        onListen() {},
        onError: (error) => {
          log.warn("web request failed", {
            error: describeError(error),
          });
          return answer(500, "Internal error: see the canvas's log.\n");
        },
      }, (request) => this.#handle(request));
    } catch (error) {
      if (error instanceof Deno.errors.AddrInUse) {
        throw new AssistantError(
          `Port ${options.port} on ${WEB_HOST} is in use: stop what listens there, or set web_port in the config (or pass --port)`,
          { cause: error },
        );
      }
      if (error instanceof Deno.errors.NotCapable) {
        throw new AssistantError(
          `No permission to listen on ${WEB_HOST}:${options.port}: run it with --allow-net=${WEB_HOST}:${options.port} (deno task web does)`,
          { cause: error },
        );
      }
      throw error;
    }
    this.port = this.#server.addr.port;
    this.#rules = { token: this.token, host: `${WEB_HOST}:${this.port}` };
  }

  /** Reads the page's files (unless given) and starts listening. */
  static async start(options: WebServerOptions): Promise<WebServer> {
    const files = options.files ?? await loadStaticFiles();
    return new WebServer(options, files);
  }

  /** The address to open: the page, token included. */
  get url(): string {
    return `http://${this.#rules.host}/${this.token}/`;
  }

  /** Pages connected now. */
  get pages(): number {
    return this.#bridges.size;
  }

  /** Closes every page's connection, then the listener. */
  async close(): Promise<void> {
    const bridges = [...this.#bridges];
    await Promise.all(bridges.map((bridge) => bridge[Symbol.asyncDispose]()));
    if (!this.#closing.signal.aborted) this.#closing.abort();
    await this.#server.finished;
  }

  /** Same as {@link WebServer.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #handle(request: Request): Response {
    const access = checkAccess(request, this.#rules);
    if (!access.ok) {
      log.warn("web request refused", { reason: access.refusal });
      return answer(403, FORBIDDEN);
    }
    if (access.websocket) {
      if (access.path !== "/ws") return answer(404, "Not found.\n");
      return this.#upgrade(request);
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return answer(405, "Only GET is served here.\n", {
        "Allow": "GET, HEAD",
      });
    }
    if (access.path === "") {
      return answer(308, null, { "Location": `/${this.token}/` });
    }
    const file = this.#files.get(
      access.path === "/" ? "/index.html" : access.path,
    );
    if (!file) return answer(404, "Not found.\n");
    return answer(200, file.body, { "Content-Type": file.type });
  }

  #upgrade(request: Request): Response {
    if (this.#bridges.size >= (this.#options.maxPages ?? DEFAULT_MAX_PAGES)) {
      log.warn("web page refused", { reason: "too many pages" });
      return answer(503, "Too many pages are open: close one.\n");
    }
    let upgraded: { socket: WebSocket; response: Response };
    try {
      upgraded = Deno.upgradeWebSocket(request);
    } catch {
      return answer(400, "Not a WebSocket upgrade.\n");
    }
    const bridge = new Bridge(upgraded.socket, {
      socketPath: this.#options.socketPath,
      ...(this.#options.connect ? { connect: this.#options.connect } : {}),
    });
    this.#bridges.add(bridge);
    bridge.closed.finally(() => this.#bridges.delete(bridge));
    return upgraded.response;
  }
}
