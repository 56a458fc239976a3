/**
 * The JSON-lines protocol, whole: inbound commands (commands.ts) and
 * outbound events (events.ts). Importers take either half or this one.
 */
export * from "./commands.ts";
export * from "./events.ts";
