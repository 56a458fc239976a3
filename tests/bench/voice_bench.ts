/**
 * The voice client's figures, the client in this process on a scripted
 * daemon's real Unix socket: from a reply's first token to the moment its
 * first chunk is handed to the player (against the floor of the first
 * sentence's end plus one synthesis alone), the client's own part of that
 * (less the sentence's end and that chunk's own synthesis), and from a
 * `stop` to silence (the player process ended and reaped). Synthesis is
 * espeak-ng when installed, else the tests' fixture synthesiser; the player
 * is a real process.
 */
import { DaemonClient } from "../../src/clients/client.ts";
import { resolvePaths } from "../../src/base/paths.ts";
import {
  defaultVoiceSettings,
  type VoiceSettings,
} from "../../src/voice/settings.ts";
import { Speaker } from "../../src/voice/speaker.ts";
import {
  type Player,
  player,
  synthesizer,
} from "../../src/voice/synthesize.ts";
import { VoiceClient } from "../../src/voice/voice_client.ts";
import {
  espeakMissing,
  ScriptedDaemon,
  TTS_SH,
  VoiceHome,
} from "../voice/harness.ts";
import {
  type GroupResult,
  max,
  median,
  ms,
  progress,
  ratio,
  within,
} from "./report.ts";

/** Sizes of the voice runs. */
export interface VoiceSizes {
  /** Replies measured for each figure; medians are reported. */
  runs: number;
  /** Milliseconds between the reply's tokens (a model at 50 tokens/s). */
  tokenGapMs: number;
}

/** Full and smoke sizes. */
export const VOICE_SIZES: Record<"full" | "smoke", VoiceSizes> = {
  full: { runs: 20, tokenGapMs: 20 },
  smoke: { runs: 2, tokenGapMs: 5 },
};

const FIRST_SENTENCE = "The weather today is mild and dry.";
/** Tokens as a model streams them: the sentence ends when the next token's space arrives. */
const TOKENS = [
  "The",
  " weather",
  " today",
  " is",
  " mild",
  " and",
  " dry.",
  " Tomorrow",
  " it",
  " rains",
  " a",
  " little.",
];
const SENTENCE_END_TOKEN = 7;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One measured moment per play: when the client handed a chunk to the player, and when that player was gone. */
interface Plays {
  started: number[];
  ended: number[];
  next(): Promise<void>;
}

function timedPlayer(real: Player): { play: Player; plays: Plays } {
  let wake: (() => void) | null = null;
  const plays: Plays = {
    started: [],
    ended: [],
    next() {
      const { promise, resolve } = Promise.withResolvers<void>();
      wake = resolve;
      return promise;
    },
  };
  const play: Player = async (wav, signal) => {
    plays.started.push(performance.now());
    wake?.();
    try {
      await real(wav, signal);
    } finally {
      plays.ended.push(performance.now());
      wake?.();
    }
  };
  return { play, plays };
}

/** Runs the voice figures; rows say so when espeak-ng is absent and the fixture synthesiser stood in. */
export async function voiceBenchmarks(
  sizes: VoiceSizes,
  smoke: boolean,
): Promise<GroupResult> {
  await using home = await VoiceHome.create();
  const espeak = espeakMissing() === null;
  const base: VoiceSettings = {
    ...defaultVoiceSettings(resolvePaths(home.env)),
    speak: "all",
    ...(espeak ? {} : { tts_command: [TTS_SH, home.ttsLog] }),
  };
  const synthesize = synthesizer(base)!;
  const engine = espeak ? "espeak-ng" : "tts.sh (espeak-ng absent)";

  progress(`voice synthesis alone: ${sizes.runs} runs (${engine})`);
  const never = new AbortController().signal;
  const synthesis: number[] = [];
  for (let i = 0; i < sizes.runs; i++) {
    const start = performance.now();
    await synthesize(FIRST_SENTENCE, never);
    synthesis.push(performance.now() - start);
  }

  // Plays to its end at once, or, for the stop figure, until it is ended.
  const quick = player({
    ...base,
    play_command: ["sh", "-c", "cat >/dev/null"],
  });
  const holding = player({
    ...base,
    play_command: ["sh", "-c", "cat >/dev/null; exec sleep 30"],
  });
  // The first chunk's own synthesis, timed inside the pipeline, so the
  // overhead left is the client's: parsing, Markdown, chunking, handing over.
  const calls: { start: number; end: number }[] = [];
  const timedSynthesize: typeof synthesize = async (text, signal) => {
    const call = { start: performance.now(), end: 0 };
    calls.push(call);
    try {
      return await synthesize(text, signal);
    } finally {
      call.end = performance.now();
    }
  };
  const first: number[] = [];
  const sentence: number[] = [];
  const overhead: number[] = [];
  const silence: number[] = [];
  await using daemon = ScriptedDaemon.start(home.socket);
  for (const [figure, real] of [["first", quick], ["stop", holding]] as const) {
    progress(`voice ${figure}: ${sizes.runs} replies`);
    const { play, plays } = timedPlayer(real);
    await using voice = new VoiceClient({
      settings: base,
      speaker: new Speaker({
        synthesize: timedSynthesize,
        play,
        report: progress,
      }),
      transcribe: null,
      say() {},
      warn: progress,
    });
    const client = await DaemonClient.connect({ path: home.socket });
    const serving = voice.serve(client);
    for (let run = 0; run < sizes.runs; run++) {
      const played = plays.next();
      const firstCall = calls.length;
      await daemon.send({ type: "user", text: "Weather?" });
      const t0 = performance.now();
      let sentenceEnd = t0;
      for (const [i, token] of TOKENS.entries()) {
        await daemon.send({ type: "token", delta: token });
        if (i === SENTENCE_END_TOKEN) sentenceEnd = performance.now();
        if (figure === "first" || i < SENTENCE_END_TOKEN) {
          await pause(sizes.tokenGapMs);
        }
      }
      await within(played, "the first chunk to play");
      const startedAt = plays.started.at(-1)!;
      if (figure === "first") {
        first.push(startedAt - t0);
        sentence.push(sentenceEnd - t0);
        const own = calls[firstCall]!;
        overhead.push(startedAt - sentenceEnd - (own.end - own.start));
        await daemon.send({ type: "done", id: 1, stopped: false });
        // Both chunks played before the next reply.
        while (
          plays.ended.length < plays.started.length ||
          plays.started.length < 2 * (run + 1)
        ) {
          await within(plays.next(), "the reply to finish");
        }
      } else {
        const ended = plays.next();
        const stoppedAt = performance.now();
        await daemon.send({ type: "done", id: null, stopped: true });
        await within(ended, "silence after stop");
        silence.push(plays.ended.at(-1)! - stoppedAt);
      }
    }
    await client.close();
    await serving;
  }

  const floor = median(sentence) + median(synthesis);
  const rows = [
    {
      id: "voice.first_chunk",
      figure:
        `voice: first token → first chunk playing (${engine}, a token every ${sizes.tokenGapMs} ms)`,
      value: `${ms(median(first))} (max ${ms(max(first))})`,
      reference: `first sentence's end + one synthesis ${ms(floor)}`,
      ratio: ratio(median(first) / floor),
      target: "the floor + < 50 ms",
      met: smoke ? null : median(overhead) < 50,
    },
    {
      id: "voice.overhead",
      figure:
        "voice: the client's own time before the first chunk (less the sentence's end and its synthesis)",
      value: `${ms(median(overhead))} (max ${ms(max(overhead))})`,
      reference: `synthesis alone ${ms(median(synthesis))} (max ${
        ms(max(synthesis))
      })`,
      ratio: "—",
      target: "< 50 ms",
      met: smoke ? null : median(overhead) < 50,
    },
    {
      id: "voice.stop",
      figure: "voice: stop → silence (the player process ended and reaped)",
      value: `${ms(median(silence))} (max ${ms(max(silence))})`,
      reference: "—",
      ratio: "—",
      target: "< 100 ms",
      met: smoke ? null : median(silence) < 100,
    },
  ];
  return { rows, sections: [] };
}
