/**
 * puppeteer-core for the canvas's tests, pinned here rather than in
 * deno.json: every package of the import map is installed before any task
 * runs, and the daemon's tasks must fetch only what they run.
 */
export { default } from "npm:puppeteer-core@25.16.0";
export type { BoundingBox, Browser, Page } from "npm:puppeteer-core@25.16.0";
