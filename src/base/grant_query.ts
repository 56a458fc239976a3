/**
 * What a running process was granted, asked of Deno, and the shapes grants
 * take. Without imports, so a client asks without loading the config parser.
 */

/** A kind of Deno grant, as in `--allow-<kind>=…`. */
export type Kind = "read" | "write" | "net" | "run" | "env";

/** The `host:port` Deno's --allow-net wants for a URL, default port explicit. */
export function netHost(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port !== ""
    ? parsed.port
    : parsed.protocol === "https:"
    ? "443"
    : "80";
  // URL keeps IPv6 hostnames in brackets, which is what Deno expects.
  return `${parsed.hostname}:${port}`;
}

/** Whether this process holds the grant `--allow-<kind>=<value>`. */
export function holds(kind: Kind, value: string): boolean {
  return Deno.permissions.querySync(descriptor(kind, value)).state ===
    "granted";
}

function descriptor(kind: Kind, value: string): Deno.PermissionDescriptor {
  switch (kind) {
    case "read":
      return { name: "read", path: value };
    case "write":
      return { name: "write", path: value };
    case "net":
      return { name: "net", host: value };
    case "run":
      return { name: "run", command: value };
    case "env":
      return { name: "env", variable: value };
  }
}
