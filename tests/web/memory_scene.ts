/**
 * The page with memories, for its pictures and its layout tests: the
 * realistic conversation carrying four memories, two facts proposed, the
 * indexing line, and as asked the memories panel open on a list of them
 * and (on a wide screen, where the sidebar shows) a search whose results
 * came by words and by meaning.
 */
import type { MemoryView } from "../../src/protocol/protocol.ts";
import { LISTED, richHello } from "./conversation_fixture.ts";
import { alt } from "./file_steps.ts";
import { fact, OCTOBER } from "./memory_steps.ts";
import { shows, stack } from "./scripted_daemon.ts";

const DAY = 86_400;

/** The memories the panel lists, newest first. */
export const MEMORY_LIST: MemoryView[] = [
  ["Prefers metric units", null, 0],
  ["Works on a project called Tern, a sailing app written in Python", {
    id: 7,
    turn: 0,
  }, 2],
  ["Lives in Lyon and cycles to work", { id: 6, turn: 0 }, 9],
  ["Likes answers short, with a code example", null, 15],
  ["Has a cat called Tom", { id: 5, turn: 1 }, 30],
  ["Is learning Norwegian", null, 41],
  ["Reads the sources before the docs", { id: 3, turn: 0 }, 60],
].map(([text, source, ago], i) => ({
  id: 20 - i,
  text: text as string,
  created: OCTOBER - (ago as number) * DAY - (i === 0 ? 20 * DAY : 0),
  updated: OCTOBER - (ago as number) * DAY,
  source: source as MemoryView["source"],
}));

/** A search's results: by its words, by both, by meaning alone. */
const RESULTS = [
  {
    id: 6,
    title: "Weather for the weekend in Lyon",
    snippet: "take the **bike** if it is dry",
    text: "take the bike if it is dry",
    marks: [[9, 13]],
    by: "both",
  },
  {
    id: 4,
    title: "A recipe for buckwheat pancakes",
    snippet: "cycle to the market on Saturday",
    text: "cycle to the market on Saturday",
    marks: [],
    by: "meaning",
  },
];

/** A scripted daemon, the canvas and a page at `viewport` showing the scene. */
export async function memoryScene(
  viewport: { width: number; height: number },
  show: { panel: boolean; search: boolean },
): Promise<Awaited<ReturnType<typeof stack>>> {
  const s = await stack({
    ...richHello(),
    memories: 4,
    proposed: [fact("p1", "Drinks tea, not coffee")],
    indexing: { done: 1_200, total: 5_000 },
  }, viewport);
  const { page, daemon } = s;
  await daemon.send(
    { type: "conversations", items: LISTED },
    {
      type: "proposed",
      items: [fact("p2", "Plans a trip to Bergen in June")],
    },
  );
  await shows(page, "#proposals", "Plans a trip to Bergen in June");
  await shows(page, "#list", "Weather for the weekend in Lyon");
  if (show.search && viewport.width > 760) {
    await page.keyboard.down("Control");
    await page.keyboard.press("KeyK");
    await page.keyboard.up("Control");
    await page.keyboard.type("bike");
    const search = await daemon.command("search");
    await daemon.send({ type: "results", items: RESULTS, ref: search.ref });
    await shows(page, "#list", "by meaning");
  }
  if (show.panel) {
    await alt(page, "KeyM");
    const asked = await daemon.command("memories");
    await daemon.send({ type: "memories", items: MEMORY_LIST, ref: asked.ref });
    await shows(page, "#memory-list", "Reads the sources before the docs");
  } else {
    await page.focus("#input");
  }
  return s;
}
