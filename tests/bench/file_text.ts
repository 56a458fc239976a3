/**
 * Text of attached files for the files group: seeded log and config lines
 * whose vocabulary is partly the files' own (words no generated question
 * or reply holds, so a search for them can find only files) and partly the
 * common words of the history (so common queries find files too).
 */
import { countTokens } from "../support/fake_llm.ts";
import type { Random } from "./history_gen.ts";

/** A word in most generated files and in no question or reply. */
export const FILE_WORD = "upstream";
/** A prefix only the files' words start with. */
export const FILE_PREFIX = "kube";
/** A phrase of the files' log lines, in most files. */
export const FILE_PHRASE = "upstream timed out";
/** Planted rarely (about one file in 2,000): the rare file-only query. */
export const FILE_RARE = "wombatcore";

const SERVICES = [
  "nginx",
  "kubelet",
  "kubeproxy",
  "systemd",
  "containerd",
  "postgres",
  "haproxy",
];
const HOSTS = ["edge01", "edge02", "api03", "db01", "cache02", "batch07"];
const PATHS = [
  "/v1/items",
  "/v1/orders",
  "/healthz",
  "/metrics",
  "/login",
  "/static/app.js",
];
/** Words of the history that also appear in files (common queries match them). */
const SHARED = [
  "the",
  "server",
  "process",
  "connection",
  "request",
  "memory",
  "cache",
  "error",
  "default",
  "config",
  "profile",
  "socket",
];

/** File names, as people attach them. */
export const FILE_NAMES = [
  "server.log",
  "nginx.conf",
  "error.log",
  "notes.txt",
  "config.yaml",
  "build.log",
];

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/** One line of a log or config file. */
function line(random: Random, rare: boolean): string {
  const stamp = `2026-0${random.int(1, 9)}-${pad(random.int(1, 28))}T${
    pad(random.int(0, 23))
  }:${pad(random.int(0, 59))}:${pad(random.int(0, 59))}Z`;
  const host = random.pick(HOSTS);
  const service = random.pick(SERVICES);
  const shared = random.pick(SHARED);
  const u = random.next();
  let text: string;
  if (u < 0.35) {
    text = `${stamp} ${host} ${service}[${
      random.int(100, 9999)
    }]: ${FILE_PHRASE} (110: Connection timed out) while reading response header from ${FILE_WORD}, client: 10.0.${
      random.int(0, 9)
    }.${random.int(1, 254)}, request: "GET ${random.pick(PATHS)} HTTP/1.1"`;
  } else if (u < 0.6) {
    text = `${stamp} ${host} ${service}[${random.int(100, 9999)}]: ${shared} ${
      random.pick(["backoff", "restarting", "evicted", "oomkilled"])
    } after ${random.int(1, 90)}s, exit code ${random.int(0, 137)}`;
  } else if (u < 0.8) {
    text = `${stamp} ${host} ${service}: ${
      random.pick(["WARN", "INFO", "ERROR", "DEBUG"])
    } ${shared} pool ${random.int(1, 64)}/${random.int(64, 256)} in use, ${
      random.int(0, 999)
    } ms p99, kubeconfig /etc/kubernetes/${host}.conf`;
  } else {
    text = `${random.pick(SERVICES)}.${shared}_${
      random.pick(["timeout", "retries", "buffer", "workers", "keepalive"])
    } = ${random.int(1, 4096)}  # ${FILE_WORD} ${shared} setting`;
  }
  return rare ? `${text} ${FILE_RARE}` : text;
}

/** A file of about `bytes` bytes of log lines (`rare` plants FILE_RARE once). */
export function fileText(random: Random, bytes: number, rare = false): string {
  const lines: string[] = [];
  let size = 0;
  const plantAt = rare
    ? random.int(0, Math.max(0, Math.floor(bytes / 160)))
    : -1;
  while (size < bytes) {
    const next = line(random, lines.length === plantAt);
    lines.push(next);
    size += next.length + 1;
  }
  return lines.join("\n");
}

/** A file of log lines as close to `tokens` of the fake's tokens as whole lines come, without going over. */
export function fileOfTokens(random: Random, tokens: number): string {
  const lines: string[] = [];
  let total = 0;
  for (;;) {
    const next = line(random, false);
    // A line's tokens, and the newline between lines.
    const cost = countTokens(next) + (lines.length > 0 ? 1 : 0);
    if (total + cost > tokens) break;
    lines.push(next);
    total += cost;
  }
  return lines.join("\n");
}
