import manifest from "../../deno.json" with { type: "json" };

/** The daemon's version, reported by `ping` (from deno.json). */
export const VERSION: string = manifest.version;
