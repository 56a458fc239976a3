// @ts-check
/// <reference lib="dom" />
/**
 * The page's one WebSocket to the bridge, which passes each message to the
 * daemon's socket as one line and each line back as one message. It
 * reconnects by itself, and gives every command a `ref` of this tab's own,
 * by which its answers are paired with it.
 */

/** @typedef {import("./model.js").Link} Link */
/** @typedef {{type: string} & Record<string, unknown>} Command */
/**
 * @typedef {{url: string, onLine: (line: string) => void,
 *   onLink: (link: Link) => void}} ConnectionOptions
 */

const RETRY_MS = [500, 1000, 2000, 5000];

/** The close code of a WebSocket that never opened or was cut. */
const ABNORMAL = 1006;

/** A random part of every ref: every client sees every turn's refs. */
function tabId() {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(4)),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}

/** The WebSocket to the daemon, reconnecting, with refs on what it sends. */
export class Connection {
  /** @type {WebSocket | null} */
  #ws = null;
  #attempt = 0;
  #refs = 0;
  #tab = tabId();
  #options;
  /** When each kind of command was last sent (the tests and the benchmark read it). */
  /** @type {Record<string, number>} */
  sentAt = {};

  /** @param {ConnectionOptions} options */
  constructor(options) {
    this.#options = options;
  }

  /** Whether a command sent now reaches the daemon. */
  get open() {
    return this.#ws !== null && this.#ws.readyState === WebSocket.OPEN;
  }

  /** Opens the socket, and again after every close. */
  connect() {
    // A retry keeps saying why the last attempt failed until one succeeds.
    if (this.#attempt === 0) {
      this.#options.onLink({ state: "connecting", code: null, why: "" });
    }
    const socket = new WebSocket(this.#options.url);
    this.#ws = socket;
    socket.addEventListener("open", () => {
      this.#attempt = 0;
    });
    // A message holds one or more whole lines, as one read of the socket
    // brought them.
    socket.addEventListener("message", (event) => {
      for (const line of String(event.data).split("\n")) {
        if (line !== "") this.#options.onLine(line);
      }
    });
    socket.addEventListener("close", (event) => {
      if (this.#ws !== socket) return;
      this.#ws = null;
      const wait = RETRY_MS[Math.min(this.#attempt++, RETRY_MS.length - 1)];
      const why = event.reason ||
        (event.code === ABNORMAL
          ? "the canvas does not answer (stopped, or restarted with a new address)"
          : `closed (${event.code})`);
      this.#options.onLink({ state: "down", code: event.code, why });
      setTimeout(() => this.connect(), wait);
    });
  }

  /**
   * Sends one command with a fresh `ref` and returns the ref; null when not
   * connected.
   * @param {Command} command
   * @returns {string | null}
   */
  send(command) {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return null;
    const ref = `web-${this.#tab}-${++this.#refs}`;
    this.sentAt[command.type] = performance.now();
    ws.send(JSON.stringify({ ...command, ref }));
    return ref;
  }
}
