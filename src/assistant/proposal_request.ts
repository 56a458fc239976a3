/**
 * The side request that proposes facts to remember: it reads the turns not
 * read yet, with the memories already kept, and asks for at most three new
 * facts in a shape a JSON schema fixes (which llama-server turns into a
 * grammar, so a small model answers in shape). An answer cut by its token
 * limit or out of that shape is an error, never read for facts; of one in
 * shape, only facts new to the user's memories are worth proposing.
 */
import { AssistantError } from "../base/errors.ts";
import type { ChatMessage } from "../llm/chat_types.ts";
import type { ModelChoice } from "../llm/client.ts";
import { cleanMemory } from "../protocol/protocol.ts";
import { folded } from "../store/store.ts";
import type { ModelSource } from "./turn.ts";
import { withoutThinking } from "../llm/think_tags.ts";
import { summaryBody } from "./summary_request.ts";

/** Most facts one request may propose. */
const MAX_FACTS = 3;
/** Tokens a proposal request may write. */
const MAX_TOKENS = 300;
/** Characters of the turns' text one request reads, from the newest back. */
const READ_CHARS = 12_000;
/** Characters of the memories kept one request lists as known, from the newest back: a long list never makes every request too long. */
const KNOWN_CHARS = 4_000;

const INSTRUCTION =
  `From the conversation below, pick at most ${MAX_FACTS} lasting facts about the user or their wishes that would help in later conversations (their preferences, their projects and people's names, how they like answers). Leave out anything about this conversation alone, anything already known (listed first), and guesses. Each fact one short sentence in the conversation's language. Answer with JSON: {"facts": [...]}, an empty list when there is nothing worth keeping.`;

/** The shape the model must answer in: llama-server makes it a grammar. */
const FACTS_SCHEMA = {
  type: "object",
  properties: {
    facts: {
      type: "array",
      items: { type: "string", minLength: 1, maxLength: 500 },
      maxItems: MAX_FACTS,
    },
  },
  required: ["facts"],
  additionalProperties: false,
};

/** What a proposal request is made of. */
export interface FactsRequest {
  llm: ModelSource;
  model: ModelChoice;
  /** The memories kept, newest first; none when memories are off. */
  known: readonly { text: string }[];
  /** The turns not read yet, oldest first. */
  turns: readonly { user: string; reply: string }[];
  /** The config's [request] table. */
  request: Record<string, unknown>;
  signal: AbortSignal;
}

/** The facts the model proposes from the turns; AssistantError when its answer is unfinished or not `{"facts": [string]}`. */
export async function askFacts(input: FactsRequest): Promise<string[]> {
  const { llm, model, signal } = input;
  // Bounded as a summary is: thinking off, its own limit whatever [request] says.
  const body = summaryBody({
    model: model.id,
    messages: factsMessages(input.known, input.turns),
    schemas: [],
    request: input.request,
    cacheReuse: 0,
    maxTokens: MAX_TOKENS,
  });
  body.response_format = {
    type: "json_schema",
    json_schema: { name: "facts", schema: FACTS_SCHEMA },
  };
  const stream = await llm.chat(model, body, signal);
  let answer = "";
  let finish: string | null = null;
  for await (const delta of stream) {
    if (delta.kind === "content") answer += delta.text;
    else if (delta.kind === "finish") finish = delta.reason;
  }
  if (finish !== "stop") {
    throw new AssistantError("proposal answer not finished", {
      code: "malformed_answer",
    });
  }
  return factsOf(answer);
}

/** A fact worth proposing, and its text with case and spacing folded. */
export interface NewFact {
  text: string;
  folded: string;
}

/** The facts of an answer worth proposing, at most `MAX_FACTS`: cleaned, each once, none equal (case and spacing aside) to one refused, waiting or kept. */
export function newFacts(
  facts: readonly string[],
  refused: ReadonlySet<string>,
  waiting: Iterable<string>,
  kept: ReadonlySet<string>,
): NewFact[] {
  const seen = new Set(waiting);
  const fresh: NewFact[] = [];
  for (const fact of facts) {
    const text = cleanMemory(fact);
    if (text === null) continue;
    const key = folded(text);
    if (seen.has(key) || refused.has(key) || kept.has(key)) continue;
    seen.add(key);
    fresh.push({ text, folded: key });
    if (fresh.length === MAX_FACTS) break;
  }
  return fresh;
}

/** The messages of a proposal request: the instruction, then what is known and the turns' text, the newest kept when they are long. */
function factsMessages(
  known: readonly { text: string }[],
  turns: readonly { user: string; reply: string }[],
): ChatMessage[] {
  const list = knownList(known);
  let text = "";
  for (let i = turns.length - 1; i >= 0 && text.length < READ_CHARS; i--) {
    const turn = turns[i]!;
    text = `User: ${turn.user}\nAssistant: ${turn.reply}\n\n${text}`;
  }
  return [
    { role: "system", content: INSTRUCTION },
    {
      role: "user",
      content: `Already known:\n${list || "(nothing)"}\n\nConversation:\n${
        text.slice(-READ_CHARS)
      }`,
    },
  ];
}

/** The memories kept, newest first, as many as fit `KNOWN_CHARS`, one per line. */
function knownList(memories: readonly { text: string }[]): string {
  const lines: string[] = [];
  let chars = 0;
  for (const memory of memories) {
    const line = `- ${memory.text}`;
    chars += line.length + 1;
    if (chars > KNOWN_CHARS) break;
    lines.push(line);
  }
  return lines.join("\n");
}

/** The facts of a proposal answer; AssistantError when it is not `{"facts": [string]}`. */
function factsOf(answer: string): string[] {
  const bare = withoutThinking(answer).trim();
  let parsed: unknown;
  try {
    parsed = JSON.parse(bare);
  } catch (error) {
    throw new AssistantError("proposal answer is not JSON", {
      code: "malformed_answer",
      cause: error,
    });
  }
  const facts = (parsed as { facts?: unknown } | null)?.facts;
  if (!Array.isArray(facts) || !facts.every((f) => typeof f === "string")) {
    throw new AssistantError("proposal answer has no list of facts", {
      code: "malformed_answer",
    });
  }
  return facts;
}
