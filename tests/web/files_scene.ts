/**
 * The page with files, for its pictures and its layout tests: a saved
 * conversation whose turn carried a chart and a log (the chart fetched
 * with `file` as the page asks for it), and a picture and a config file
 * attached in the composer under a question being typed.
 */
import assert from "node:assert/strict";
import {
  filesConversation,
  LISTED_WITH_FILES,
  NGINX_CONF,
  richHello,
} from "./conversation_fixture.ts";
import { dropFiles, pictureBase64 } from "./file_helpers.ts";
import { POLL, stack } from "./scripted_daemon.ts";

/** A scripted daemon, the canvas and a page at `viewport` showing the scene. */
export async function filesScene(
  viewport: { width: number; height: number },
): Promise<Awaited<ReturnType<typeof stack>>> {
  const s = await stack({ ...richHello(), id: null, turns: [] }, viewport);
  const { page, daemon } = s;
  const chart = await pictureBase64(page, 960, 540);
  await daemon.send(
    { type: "conversations", items: LISTED_WITH_FILES },
    filesConversation(Uint8Array.fromBase64(chart).length),
  );
  const asked = await daemon.command("file");
  assert.deepEqual(
    [asked.conversation, asked.turn, asked.index],
    [9, 0, 0],
    "the chart asked for at its place",
  );
  await daemon.send({
    type: "file",
    conversation: 9,
    turn: 0,
    index: 0,
    name: "cpu-monday.png",
    mime: "image/png",
    data: chart,
    ref: asked.ref,
  });
  await dropFiles(page, "#composer", [
    {
      name: "dashboard-tuesday.png",
      type: "image/png",
      picture: { width: 1920, height: 1080 },
    },
    {
      name: "nginx.conf",
      type: "text/plain",
      base64: new TextEncoder().encode(NGINX_CONF).toBase64(),
    },
  ]);
  await page.waitForFunction(
    `document.querySelectorAll("#attached-list li.ready").length === 2 &&
      [...document.querySelectorAll(".turn .thumb img")]
        .filter((img) => img.complete && img.naturalWidth > 0).length === 1`,
    POLL,
  );
  await page.focus("#input");
  await page.keyboard.type("Tuesday looks the same: is it the same cause?");
  return s;
}
