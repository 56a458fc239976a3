/**
 * One scenario of the tier, run twice: the daemon (started as the README
 * starts it, with its derived flags) against the real llama-server, then
 * against the fake; or the same request at the wire to both. Each run is
 * checked on its own, then the two are compared: what a client saw from
 * the real server is what it saw from the fake, or the fake is wrong.
 */
import assert from "node:assert/strict";
import { Daemon } from "../support/daemon_harness.ts";
import {
  isIdle,
  type Received,
  SocketClient,
} from "../support/socket_client.ts";
import {
  type Backend,
  fakeBackend,
  type FakeSetup,
  type Kind,
  realBackend,
  type RealSetup,
} from "./backends.ts";
import type { LlamaBuild } from "./build.ts";

/** What one run showed, in a form the two servers' runs compare in. */
export interface Observed {
  /** The events a client saw, in order, as `signature` writes them. */
  events: string[];
  /** The fields of each `done.timings`, sorted; empty where it had none. */
  timings: string[][];
  /** Tokens generated in each finished turn (`done.timings.predicted_n`). */
  predicted: number[];
  /** Whatever else the scenario compares between the servers. */
  extra: Record<string, unknown>;
}

/** What a run is given. */
export interface RunContext {
  backend: Backend;
  /** The daemon and a connected client, unless the scenario is at the wire. */
  daemon: Daemon | null;
  client: SocketClient | null;
}

/** A scenario of the tier. */
export interface Scenario {
  name: string;
  real: RealSetup;
  fake: FakeSetup;
  /** The daemon's config and tools; absent for a scenario at the wire. */
  daemon?: { config: string; toolsDirs?: string[] };
  run(context: RunContext): Promise<Observed>;
  /** What a user would check of each server's run. */
  check(seen: Observed, kind: Kind): void;
  /** What must hold between the runs; default: the same events, timings fields and extra. */
  same?(real: Observed, fake: Observed): void;
}

/** How long a client waits for any one event: generous, for a loaded machine. */
const EVENT_TIMEOUT_MS = 60_000;

/**
 * The events a client saw as comparable lines: `backend` (timing-dependent
 * probes) and `hello` left out, a run of `think` or `token` deltas as one
 * line (the noise differs, the order does not), errors by their code.
 */
export function signature(events: readonly Received[]): string[] {
  const lines: string[] = [];
  for (const event of events) {
    const e = event as Record<string, unknown>;
    let line: string;
    switch (event.type) {
      case "backend":
      case "hello":
        continue;
      case "think":
      case "token":
        line = `${event.type}…`;
        if (lines.at(-1) === line) continue;
        break;
      case "state":
        line = `state ${e.state}${e.tool ? ` ${e.tool}` : ""}`;
        break;
      case "tool":
        line = `tool ${e.name} ${e.done ? "done" : "starts"}`;
        break;
      case "done":
        line = `done${e.stopped ? " stopped" : ""}${
          e.truncated ? ` truncated_by ${e.truncated_by}` : ""
        }`;
        break;
      case "error":
        line = `error ${e.code}${e.turn ? " turn" : ""}`;
        break;
      default:
        line = event.type;
    }
    lines.push(line);
  }
  return lines;
}

/** What a run saw: its events' signature, timings fields and tokens generated. */
export function observe(
  events: readonly Received[],
  extra: Record<string, unknown> = {},
): Observed {
  const dones = events.filter((event) => event.type === "done") as unknown as {
    timings?: Record<string, number>;
  }[];
  return {
    events: signature(events),
    timings: dones.map((done) => Object.keys(done.timings ?? {}).sort()),
    predicted: dones.filter((done) => done.timings)
      .map((done) => done.timings!.predicted_n!),
    extra,
  };
}

/** Sends a command and reads every event up to the `state idle` that ends the turn. */
export async function turn(
  client: SocketClient,
  command: Record<string, unknown>,
): Promise<Received[]> {
  await client.send(command);
  return await client.until(isIdle);
}

/** Prints a figure of the tier (prompt tokens per turn, pass counts) on its own line. */
export function report(line: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
}

async function runOn(
  build: LlamaBuild,
  scenario: Scenario,
  kind: Kind,
): Promise<Observed> {
  await using backend = kind === "real"
    ? await realBackend(build, scenario.real)
    : await fakeBackend(scenario.fake);
  if (!scenario.daemon) {
    return await scenario.run({ backend, daemon: null, client: null });
  }
  await using daemon = await Daemon.start({
    llmUrl: backend.url,
    config: scenario.daemon.config,
    toolsDirs: scenario.daemon.toolsDirs ?? [],
  });
  await using client = await SocketClient.connect(daemon.paths.socketPath, {
    timeoutMs: EVENT_TIMEOUT_MS,
  });
  await client.next("hello");
  return await scenario.run({ backend, daemon, client });
}

/** Registers the scenario: a step on the real server, one on the fake, one comparing them. */
export function scenarioTest(build: LlamaBuild, scenario: Scenario): void {
  Deno.test(scenario.name, async (t) => {
    const seen: Partial<Record<Kind, Observed>> = {};
    for (const kind of ["real", "fake"] as const) {
      await t.step(`${kind} llama-server`, async () => {
        const observed = await runOn(build, scenario, kind);
        scenario.check(observed, kind);
        seen[kind] = observed;
      });
    }
    const same = scenario.daemon
      ? "the daemon saw the same from both"
      : "both servers answered the same";
    await t.step(same, () => {
      const { real, fake } = seen;
      assert.ok(real && fake, "both runs finished");
      if (scenario.same) return scenario.same(real, fake);
      assert.deepEqual(real.events, fake.events, "the events, in order");
      assert.deepEqual(real.timings, fake.timings, "the timings fields");
      assert.deepEqual(real.extra, fake.extra);
    });
  });
}
