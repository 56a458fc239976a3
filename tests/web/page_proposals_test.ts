/**
 * The facts the assistant proposes to remember, as cards in a real
 * Chromium at 1280 and 390 px wide, against a scripted daemon
 * (docs/protocol.md, "Memories"): Keep, Edit and No send their commands; a
 * card closes on `decided` whoever answered, and quietly on
 * `no_such_proposal`; a new card goes above the others without moving
 * them; typing a question is never in their way; the keyboard answers;
 * and the model's `remember` tool asks its approval as a sentence.
 */
import assert from "node:assert/strict";
import { screenshot } from "../support/browser.ts";
import { LISTED, richHello } from "./conversation_fixture.ts";
import { alt, SIZES } from "./file_steps.ts";
import {
  disabled,
  fact,
  focused,
  gone,
  notices,
  retype,
  texts,
  valueOf,
} from "./memory_steps.ts";
import { box, overflows } from "./measure.ts";
import { pageTest, shows, stack } from "./scripted_daemon.ts";

/** The card of a proposal. */
const card = (proposal: string) => `.proposal[data-proposal="${proposal}"]`;

pageTest(
  "proposal cards keep, keep as reworded and refuse, and close on decided, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({
        ...richHello(),
        memories: 1,
        proposed: [fact("p1", "Prefers metric units")],
      }, size);
      const { page, daemon, browser } = s;
      await daemon.send({ type: "conversations", items: LISTED });
      await shows(page, card("p1"), "Remember this? “Prefers metric units”");
      const before = (await box(page, `${card("p1")} .keep`))!;
      await daemon.send({
        type: "proposed",
        items: [fact("p2", "Works on a sailing app called Tern")],
      });
      await shows(page, card("p2"), "Works on a sailing app called Tern");
      // The new card above; the old one's Keep where it was.
      assert.ok(
        (await box(page, card("p2")))!.bottom <=
          (await box(page, card("p1")))!.top,
        "the newer card stands above",
      );
      assert.deepEqual(await box(page, `${card("p1")} .keep`), before);
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      const log = (await box(page, "#log"))!;
      assert.ok(
        log.height >= size.height / 3,
        `the conversation keeps ${log.height}px`,
      );
      await screenshot(page, `42-proposals-${size.name}`);

      // Keep: waits for the daemon, then closes.
      await page.click(`${card("p1")} .keep`);
      const keep = await daemon.command("accept");
      assert.deepEqual(keep, { type: "accept", proposal: "p1", ref: keep.ref });
      // Its buttons wait for the daemon's answer.
      assert.equal(
        await page.$eval(
          `${card("p1")} .no`,
          (n) => n.getAttribute("aria-disabled"),
        ),
        "true",
      );
      await daemon.send({
        type: "decided",
        proposal: "p1",
        accepted: true,
        ref: keep.ref,
      });
      await gone(page, card("p1"));

      // Edit: kept as the user words it.
      await page.click(`${card("p2")} .edit`);
      assert.equal(
        await valueOf(page, `${card("p2")} textarea`),
        "Works on a sailing app called Tern",
      );
      await retype(page, "Works on Tern, a sailing app");
      await page.click(`${card("p2")} .keep`);
      const edited = await daemon.command("accept");
      assert.deepEqual([edited.proposal, edited.text], [
        "p2",
        "Works on Tern, a sailing app",
      ]);
      await daemon.send({
        type: "decided",
        proposal: "p2",
        accepted: true,
        ref: edited.ref,
      });
      await gone(page, card("p2"));

      // No.
      await daemon.send({ type: "proposed", items: [fact("p3", "Has a dog")] });
      await shows(page, card("p3"), "Has a dog");
      await page.click(`${card("p3")} .no`);
      const no = await daemon.command("refuse");
      assert.equal(no.proposal, "p3");
      await daemon.send({
        type: "decided",
        proposal: "p3",
        accepted: false,
        ref: no.ref,
      });
      await gone(page, card("p3"));
      assert.equal(
        await page.$eval(
          "#proposals",
          (n) => (n as unknown as { hidden: boolean }).hidden,
        ),
        true,
      );
      assert.deepEqual(await notices(page), []);
      assert.deepEqual(browser.errors, []);
    }
  },
);

pageTest(
  "a card answered by another client closes on decided; one answered first elsewhere closes quietly on no_such_proposal",
  async () => {
    await using s = await stack({
      id: 7,
      turns: [],
      memories: 0,
      proposed: [fact("p1", "Likes tea"), fact("p2", "Lives in Lyon")],
    });
    const { page, daemon } = s;
    await shows(page, "#proposals", "Likes tea");
    await shows(page, "#proposals", "Lives in Lyon");
    // Another client kept p1.
    await daemon.send({ type: "decided", proposal: "p1", accepted: true });
    await gone(page, card("p1"));
    // This page says No to p2, which another client answered first.
    await page.click(`${card("p2")} .no`);
    const late = await daemon.command("refuse");
    await daemon.send({
      type: "error",
      code: "no_such_proposal",
      message: "no such proposal",
      ref: late.ref,
    });
    await gone(page, card("p2"));
    assert.deepEqual(await notices(page), [], "nothing to tell");
    // A rewording the daemon refuses is told, and the card stays to fix it.
    await daemon.send({ type: "proposed", items: [fact("p3", "Has a cat")] });
    await shows(page, card("p3"), "Has a cat");
    await page.click(`${card("p3")} .edit`);
    await retype(page, "Has a cat named Tom");
    await page.keyboard.press("Enter");
    const refused = await daemon.command("accept");
    assert.equal(refused.text, "Has a cat named Tom");
    await daemon.send({
      type: "error",
      code: "bad_memory",
      message: "bad memory",
      ref: refused.ref,
    });
    await shows(page, "#notices", "bad memory");
    assert.equal(
      await valueOf(page, `${card("p3")} textarea`),
      "Has a cat named Tom",
    );
    assert.equal(await disabled(page, `${card("p3")} .keep`), false);
    // Esc leaves the rewording: the fact as proposed again.
    await page.keyboard.press("Escape");
    await shows(page, card("p3"), "Remember this? “Has a cat”");
  },
);

pageTest(
  "cards are no obstacle to typing a question, and Alt+Y and Alt+X answer the oldest",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({ id: 7, turns: [], memories: 0 }, size);
      const { page, daemon } = s;
      await page.focus("#input");
      await page.keyboard.type("What is the ");
      await daemon.send({
        type: "proposed",
        items: [fact("p1", "Likes tea"), fact("p2", "Lives in Lyon")],
      });
      await shows(page, "#proposals", "Lives in Lyon");
      await page.keyboard.type("time in Oslo?");
      assert.equal(await focused(page), "input");
      assert.equal(await valueOf(page, "#input"), "What is the time in Oslo?");
      assert.deepEqual(await texts(page, ".proposal .keep[title*='Alt+Y']"), [
        "Keep",
      ]);
      await alt(page, "KeyY");
      const keep = await daemon.command("accept");
      assert.equal(keep.proposal, "p1", "the oldest first");
      await daemon.send({
        type: "decided",
        proposal: "p1",
        accepted: true,
        ref: keep.ref,
      });
      await gone(page, card("p1"));
      await alt(page, "KeyX");
      const no = await daemon.command("refuse");
      assert.equal(no.proposal, "p2");
      await daemon.send({
        type: "decided",
        proposal: "p2",
        accepted: false,
        ref: no.ref,
      });
      await gone(page, card("p2"));
      // The question is still there, and Enter asks it.
      assert.equal(await focused(page), "input");
      await page.keyboard.press("Enter");
      const ask = await daemon.command("ask");
      assert.equal(ask.text, "What is the time in Oslo?");
      // A card reached with the keyboard hands the focus on when it closes.
      await daemon.send({
        type: "proposed",
        items: [fact("p3", "Has a cat"), fact("p4", "Has a dog")],
      });
      await shows(page, card("p4"), "Has a dog");
      await page.focus(`${card("p3")} .keep`);
      await page.keyboard.press("Enter");
      const kept = await daemon.command("accept");
      await daemon.send({
        type: "decided",
        proposal: "p3",
        accepted: true,
        ref: kept.ref,
      });
      await gone(page, card("p3"));
      await page.waitForFunction(
        `document.activeElement === document.querySelector('${
          card("p4")
        } .keep')`,
        { timeout: 15_000, polling: 50 },
      );
    }
  },
);

pageTest(
  "the model's remember tool asks its approval as a sentence, at 1280 and 390 wide",
  async () => {
    for (const size of SIZES) {
      await using s = await stack({ ...richHello(), memories: 0 }, size);
      const { page, daemon } = s;
      await daemon.send(
        { type: "user", text: "Remember that my cat is called Tom" },
        { type: "state", state: "confirm", tool: "remember" },
        {
          type: "confirm",
          call: "c1",
          tool: "remember",
          args: { text: "Has a cat called Tom" },
        },
      );
      await shows(page, "#confirms", "Remember: “Has a cat called Tom”?");
      assert.deepEqual(await texts(page, "#confirms .confirm-text"), [
        "Remember: “Has a cat called Tom”?",
      ]);
      assert.deepEqual(await overflows(page), [], `${size.name} wide`);
      await screenshot(page, `43-remember-approval-${size.name}`);
      await page.click("#confirms .allow");
      const approve = await daemon.command("approve");
      assert.deepEqual([approve.call, approve.allow], ["c1", true]);
    }
  },
);
