/**
 * A realistic conversation for the page's layout tests and pictures: a
 * saved conversation with a summary, a reply with a heading, a list, a
 * table, a code block and a task list, one with a tool use, and a last
 * reply that streams and ends with llama-server's timings.
 */

/** The model as llama-server names it: a path. */
export const MODEL_PATH = "/home/sam/models/Qwen3-8B-Q4_K_M.gguf";

/** What the first reply says: every kind of block the page draws. */
export const RICH_REPLY = [
  "## Sorting by a key",
  "",
  "Use `sorted()` with a **key function**; it returns a new list and leaves the original alone:",
  "",
  "```python",
  'people = [{"name": "Ada", "age": 36}, {"name": "Alan", "age": 41}]',
  'by_age = sorted(people, key=lambda p: p["age"], reverse=True)',
  "# list.sort() sorts in place instead",
  "```",
  "",
  "| approach | copies the list | stable |",
  "| --- | --- | --- |",
  "| `sorted(items, key=...)` | yes | yes |",
  "| `items.sort(key=...)` | no, in place | yes |",
  "",
  '- `operator.itemgetter("age")` is a little faster than a lambda',
  "- pass `reverse=True` for the largest first",
  "",
  "What is left:",
  "",
  "- [x] sort by one key",
  "- [ ] sort by several keys",
].join("\n");

/** The conversations the sidebar lists. */
export const LISTED = [
  { id: 7, title: "Sorting a list of dicts", updated: 1_760_000_300 },
  { id: 6, title: "Weather for the weekend in Lyon", updated: 1_760_000_200 },
  {
    id: 5,
    title: "Unix sockets versus TCP on loopback",
    updated: 1_759_900_000,
  },
  { id: 4, title: "A recipe for buckwheat pancakes", updated: 1_759_800_000 },
  { id: 3, title: "What FTS5's bm25 ranks first", updated: 1_759_700_000 },
];

/** The `hello` of a page opened on conversation 7, llama-server up. */
export function richHello(): Record<string, unknown> {
  return {
    state: "idle",
    model: MODEL_PATH,
    ctx_used: 2_310,
    ctx_max: 8_192,
    ctx_sent: 3,
    ctx_total: 5,
    backend: {
      state: "up",
      url: "http://127.0.0.1:8080",
      model: MODEL_PATH,
      ctx_max: 8_192,
      message: null,
    },
    id: 7,
    turns: [
      {
        user: "How do I sort a list of dicts by one of their keys in Python?",
        reply: RICH_REPLY,
        tools: [],
      },
      {
        user: "Will it rain in Lyon on Saturday?",
        reply:
          "Light rain is likely on Saturday morning in Lyon (about 60%), clearing by the afternoon, with highs around 17 °C.",
        tools: ["weather"],
      },
    ],
    listening: false,
    pending: null,
  };
}

/** The summary of the conversation's first turns, as the daemon announces it. */
export const SUMMARY_EVENT = {
  type: "summary",
  id: 7,
  text:
    "You asked how Python compares strings, and how `key=str.lower` sorts without regard to case.",
  turns: 1,
};

/** A last turn that streams and finishes with timings. */
export function liveTurn(): Record<string, unknown>[] {
  return [
    { type: "user", text: "And by two keys at once?" },
    { type: "state", state: "thinking" },
    { type: "token", delta: "Return a tuple from the key: " },
    {
      type: "token",
      delta:
        '`sorted(people, key=lambda p: (p["age"], p["name"]))` sorts by age, then by name.',
    },
    {
      type: "done",
      id: 7,
      stopped: false,
      timings: {
        prompt_n: 38,
        cache_n: 2_272,
        predicted_n: 41,
        prompt_ms: 612.4,
        predicted_ms: 2_940.7,
      },
    },
    { type: "ctx", used: 2_391, max: 8_192, sent: 2, total: 3, summarized: 1 },
    { type: "state", state: "idle" },
  ];
}

/** The reply of a turn that carried a chart and a log. */
export const FILES_REPLY = [
  "The spike at noon matches the log: at **11:59:58** the nightly `reindex` job started ten hours early (its cron line reads `0 12 * * *`, not `0 2 * * *`), and the red bar is the hour it ran.",
  "",
  "- `server.log` line 412: `reindex: started, 48 workers`",
  "- the load fell back once it finished, at 12:41",
  "",
  "Move the job back to 02:00 and cap it at 8 workers.",
].join("\n");

/** A saved conversation whose one turn carried a chart (`chartBytes` long) and a log. */
export function filesConversation(chartBytes: number): Record<string, unknown> {
  return {
    type: "conversation",
    id: 9,
    turns: [{
      user:
        "Why did the CPU spike at noon on Monday? The chart and the server's log are attached.",
      reply: FILES_REPLY,
      tools: [],
      files: [
        {
          name: "cpu-monday.png",
          mime: "image/png",
          bytes: chartBytes,
          kind: "image",
        },
        {
          name: "server.log",
          mime: "text/plain",
          bytes: 18_432,
          kind: "text",
        },
      ],
    }],
    summary: null,
  };
}

/** The conversations the sidebar lists beside the one with files. */
export const LISTED_WITH_FILES = [
  { id: 9, title: "CPU spike on Monday", updated: 1_760_000_400 },
  ...LISTED,
];

/** A config file to attach, as a reader would have it. */
export const NGINX_CONF = [
  "worker_processes auto;",
  "events { worker_connections 1024; }",
  "http {",
  "  server {",
  "    listen 443 ssl;",
  "    location /reindex { proxy_pass http://127.0.0.1:9000; }",
  "  }",
  "}",
  "",
].join("\n");
