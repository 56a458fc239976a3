/**
 * xterm.js (headless) for the tests that read a terminal's screen, pinned
 * here rather than in deno.json: every package of the import map is
 * installed before any task runs, and the daemon's tasks must fetch only
 * what they run.
 */
export { default } from "npm:@xterm/headless@6.0.0";
