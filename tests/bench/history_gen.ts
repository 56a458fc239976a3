/**
 * A seeded generator of realistic history: several languages with accented
 * words, questions of 5–60 words, replies of 50–800 words with markdown and
 * code in some, 1–200 turns a conversation, tool names on some turns. The
 * same seed always gives the same file, so runs compare.
 *
 * Files are laid with the daemon's own schema (a `Store` opens them first),
 * then filled by big transactions straight through SQL, and cached under
 * the temp dir keyed by shape, seed and size, so reruns skip the work.
 */
import { DatabaseSync } from "node:sqlite";
import { Store } from "../../src/store/store.ts";
import { cachedFile } from "./cache_file.ts";

/** Bump when the generated text changes, so stale caches are not reused. */
const GENERATOR_VERSION = 2;

/** A small fast seeded PRNG (sfc32); `next()` is uniform in [0, 1). */
export class Random {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  /** Seeds the four words from one integer. */
  constructor(seed: number) {
    this.#a = 0x9e3779b9;
    this.#b = 0x243f6a88;
    this.#c = 0xb7e15162;
    this.#d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [low, high]. */
  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1));
  }

  /** An integer in [low, high], log-uniform: short far likelier than long. */
  logInt(low: number, high: number): number {
    const x = Math.exp(
      Math.log(low) + this.next() * Math.log((high + 1) / low),
    );
    return Math.min(high, Math.max(low, Math.floor(x)));
  }

  /** One element, uniformly. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One element, Zipf-like: the first ones far likelier. */
  skewed<T>(items: readonly T[], power = 2.5): T {
    return items[Math.floor(this.next() ** power * items.length)]!;
  }
}

interface Language {
  name: string;
  share: number;
  function: string[];
  content: string[];
  questions: string[];
  openers: string[];
}

const w = (text: string) => text.split(/\s+/).filter((word) => word !== "");

const LANGUAGES: Language[] = [{
  name: "en",
  share: 0.85,
  function: w(`the the the of of and and to to a a in in is is it that for you
    with on as are be this can by or not at from your if an will use which
    when there but more one all so also has have was they we their each than
    into then these only its other some how what would should could`),
  content: w(`file files system process memory server client request data value
    function example result error command option version update change setup
    network package install build test database query index table column row
    string number list array object method class module script shell path
    directory output input stream buffer cache thread worker socket message
    weather morning evening today tomorrow city country travel train flight
    recipe kitchen garden music book history science health sleep coffee
    water energy price market money account password security privacy browser
    window screen keyboard display battery laptop phone camera photo video
    language translation grammar sentence word meaning summary article report
    project meeting schedule calendar email letter document spreadsheet
    quickly carefully usually probably exactly simply directly recently
    important different possible available common simple useful similar
    specific current previous following general local remote default
    café naïve résumé façade déjà Zürich München Málaga Bogotá São`),
  questions: [
    "how do i",
    "what is the best way to",
    "can you explain",
    "why does my",
    "what is the difference between",
    "could you help me with",
    "is it possible to",
    "give me a summary of",
  ],
  openers: [
    "One of the",
    "In most cases",
    "The short answer is that",
    "Here is how",
    "A common approach is to",
    "First of all",
    "On the other hand",
  ],
}, {
  name: "fr",
  share: 0.05,
  function: w(`le la les de des du et et à un une est en que qui pour dans
    sur pas ne plus par avec ce cette il elle nous vous ils on a sont être`),
  content: w(`fichier système mémoire serveur réseau données résultat erreur
    commande version mise jour café élève hôtel théâtre été très déjà
    français problème méthode bibliothèque clé écran fenêtre sécurité
    numéro réponse requête paramètre répertoire étape général différent
    possible première dernière début façon idée général forêt château
    santé musique cuisine voyage ville pays matin soir aujourd'hui demain`),
  questions: [
    "comment est-ce que je peux",
    "quelle est la différence entre",
    "pourquoi mon",
    "peux-tu m'expliquer",
  ],
  openers: ["En général", "Voici comment", "Tout d'abord", "Par exemple"],
}, {
  name: "de",
  share: 0.03,
  function: w(`der die das und und ist in zu den von mit nicht sich auf für
    ein eine es dem als auch an werden aus er sie wir ihr bei oder wie`),
  content: w(`Datei System Speicher Server Netzwerk Daten Ergebnis Fehler
    Befehl Größe über für schön Straße Grüße Lösung Änderung Übersicht
    Schlüssel Bildschirm Fenster Sicherheit Anfrage Verzeichnis Schritt
    möglich natürlich ähnlich häufig wichtig München Köln Zürich Brötchen
    Wetter Morgen Abend heute morgen Stadt Land Reise Zug Küche Garten`),
  questions: [
    "wie kann ich",
    "was ist der Unterschied zwischen",
    "warum funktioniert mein",
    "kannst du mir erklären",
  ],
  openers: ["Im Allgemeinen", "So geht es", "Zunächst einmal", "Zum Beispiel"],
}, {
  name: "es",
  share: 0.03,
  function: w(`el la los las de del y y en que un una es por con para no se
    lo al como más pero sus le ya o este sí porque esta entre cuando`),
  content: w(`archivo sistema memoria servidor red datos resultado error
    comando versión canción niño año mañana pequeño señal también está
    información solución página búsqueda opción configuración método
    café corazón música teléfono rápido fácil difícil último próximo
    ciudad país viaje tren cocina jardín tiempo mañana tarde noche`),
  questions: [
    "cómo puedo",
    "cuál es la diferencia entre",
    "por qué mi",
    "puedes explicarme",
  ],
  openers: ["En general", "Así es como", "En primer lugar", "Por ejemplo"],
}, {
  name: "it",
  share: 0.025,
  function: w(`il la le di e e che un una è per in non con si da del della
    come più ma anche sono questo questa al alla nel gli lo ci`),
  content: w(`file sistema memoria server rete dati risultato errore comando
    versione città perché però così più già università qualità attività
    caffè tè libertà novità velocità sicurezza finestra schermo chiave
    pagina ricerca opzione metodo viaggio treno cucina giardino tempo
    mattina sera oggi domani paese musica salute libro storia`),
  questions: [
    "come posso",
    "qual è la differenza tra",
    "perché il mio",
    "puoi spiegarmi",
  ],
  openers: ["In generale", "Ecco come", "Prima di tutto", "Per esempio"],
}, {
  name: "pt",
  share: 0.015,
  function: w(`o a os as de do da e e em que um uma é para com não se por
    mais como mas ao dos das seu sua ou quando muito nos já`),
  content: w(`arquivo sistema memória servidor rede dados resultado erro
    comando versão informação não então também você está avó irmã
    coração pão mão solução opção configuração página pesquisa método
    viagem trem cozinha jardim tempo manhã tarde noite cidade país`),
  questions: [
    "como posso",
    "qual é a diferença entre",
    "por que o meu",
    "pode me explicar",
  ],
  openers: ["Em geral", "Veja como", "Antes de tudo", "Por exemplo"],
}];

/** Planted rarely (about one turn in 7,000 each): the "rare word" queries. */
export const RARE_WORDS: readonly string[] = w(`quokka zeugma xylophonist
  kumquat axolotl pangolin narwhal capybara okapi fennec tardigrade ocelot`);

const TOOLS = ["date", "weather", "wikipedia"] as const;

const CODE_LINES = [
  "const result = await fetch(url, { signal });",
  "for (const item of items) total += item.size;",
  "if (!response.ok) throw new Error(response.statusText);",
  "def parse(line):\n    return line.strip().split(',')",
  "SELECT id, title FROM notes WHERE updated > ? ORDER BY updated DESC;",
  "git rebase -i HEAD~3 && git push --force-with-lease",
  "let mut buffer = Vec::with_capacity(4096);",
  "export function clamp(x: number, low: number, high: number) {",
  "  return Math.min(high, Math.max(low, x));",
  "}",
  "docker run --rm -v $(pwd):/src -w /src node:22 npm test",
];

/** Pseudo-words that give the vocabulary a long tail, as real text has. */
function tailWords(random: Random, count: number): string[] {
  const syllables = w(`ka lo mi ne ru sa ti vo be da fe gi ho ju ke la mo nu
    pi qua re si to ul va xe yo za bra cle dri fro gla ple stra tri`);
  const words: string[] = [];
  for (let i = 0; i < count; i++) {
    let word = "";
    const n = random.int(2, 4);
    for (let s = 0; s < n; s++) word += random.pick(syllables);
    words.push(word);
  }
  return words;
}

/** Makes the text of turns: one generator per seed. */
export class TextGenerator {
  readonly #random: Random;
  readonly #tail: string[];

  /** A generator whose output depends only on the seed. */
  constructor(random: Random) {
    this.#random = random;
    this.#tail = tailWords(new Random(7919), 20_000);
  }

  /** A language, by share. */
  language(): Language {
    let u = this.#random.next();
    for (const language of LANGUAGES) {
      u -= language.share;
      if (u < 0) return language;
    }
    return LANGUAGES[0]!;
  }

  #word(language: Language): string {
    const r = this.#random;
    const u = r.next();
    if (u < 0.45) return r.skewed(language.function, 1.6);
    if (u < 0.97) return r.skewed(language.content, 1.8);
    return r.skewed(this.#tail, 3);
  }

  #sentence(language: Language, words: number, opener: boolean): string {
    const r = this.#random;
    const parts: string[] = [];
    if (opener && r.next() < 0.25) parts.push(...w(r.pick(language.openers)));
    while (parts.length < words) parts.push(this.#word(language));
    if (r.next() < 0.0001) {
      parts.splice(r.int(0, parts.length - 1), 0, r.pick(RARE_WORDS));
    }
    const text = parts.join(" ");
    return text.charAt(0).toUpperCase() + text.slice(1) + ".";
  }

  /** A question of 5–60 words. */
  question(language: Language): string {
    const r = this.#random;
    const target = r.logInt(5, 60);
    const parts = w(r.pick(language.questions));
    while (parts.length < target) parts.push(this.#word(language));
    const text = parts.slice(0, target).join(" ");
    return text.charAt(0).toUpperCase() + text.slice(1) + "?";
  }

  /** A reply of 50–800 words; some with markdown, some with code. */
  reply(language: Language): string {
    const r = this.#random;
    const target = r.logInt(50, 800);
    const markdown = r.next() < 0.3;
    const code = r.next() < 0.1;
    const out: string[] = [];
    let words = 0;
    let paragraph: string[] = [];
    while (words < target) {
      const length = Math.min(r.int(6, 24), target - words + 1);
      words += length;
      if (markdown && r.next() < 0.15) {
        out.push(paragraph.join(" "));
        paragraph = [];
        if (r.next() < 0.4) {
          out.push(`## ${this.#sentence(language, 3, false).slice(0, -1)}`);
        } else {
          out.push(
            `- **${this.#word(language)}**: ${
              this.#sentence(language, length, false)
            }`,
          );
        }
        continue;
      }
      paragraph.push(this.#sentence(language, length, paragraph.length === 0));
      if (paragraph.length >= r.int(2, 6)) {
        out.push(paragraph.join(" "));
        paragraph = [];
      }
    }
    if (paragraph.length > 0) out.push(paragraph.join(" "));
    if (code) {
      const lines: string[] = [];
      const count = r.int(3, 12);
      for (let i = 0; i < count; i++) lines.push(r.pick(CODE_LINES));
      out.splice(r.int(1, out.length), 0, "```\n" + lines.join("\n") + "\n```");
    }
    return out.filter((part) => part !== "").join("\n\n");
  }

  /** Tool names for a turn: none on most. */
  tools(): string[] {
    const r = this.#random;
    if (r.next() >= 0.12) return [];
    return r.next() < 0.85 ? [r.pick(TOOLS)] : [r.pick(TOOLS), r.pick(TOOLS)];
  }
}

/** Turns of the next conversation: 1–200, mostly short, a few long. */
function conversationLength(random: Random): number {
  if (random.next() < 0.03) return random.int(50, 200);
  return Math.min(200, 1 + Math.floor(-Math.log(1 - random.next()) * 6));
}

/** The shape of a generated file. */
export type Shape =
  /** Conversations of 1–200 turns, as a person's history grows. */
  | "natural"
  /** `BIG_CONVERSATIONS` conversations of 500 turns, then one-turn conversations. */
  | "catalog";

/** Conversations of 500 turns at the start of a catalog file (ids 1…). */
export const BIG_CONVERSATIONS = 8;
/** Turns of each big conversation of a catalog file. */
export const BIG_TURNS = 500;

/** What to generate. */
export interface GenerateOptions {
  seed: number;
  turns: number;
  shape?: Shape;
  /** Progress callback, every big transaction. */
  progress?: (turns: number) => void;
}

/** What a generated file holds. */
export interface Generated {
  path: string;
  turns: number;
  conversations: number;
  bytes: number;
  /** Seconds the generation took; 0 when the file came from the cache. */
  seconds: number;
  cached: boolean;
}

const BATCH_TURNS = 50_000;

/** Fills an empty file at `path` (which a Store has just laid) with turns. */
export function generateInto(path: string, options: GenerateOptions): number {
  const random = new Random(options.seed);
  const text = new TextGenerator(random);
  const shape = options.shape ?? "natural";
  const db = new DatabaseSync(path);
  try {
    // A crash mid-generation only loses a cache file; OFF is refused here.
    db.exec("PRAGMA journal_mode = MEMORY");
    db.exec("PRAGMA synchronous = OFF");
    db.exec("PRAGMA cache_size = -262144");
    const addConversation = db.prepare(
      "INSERT INTO conversations(id, title, created, updated) VALUES (?, ?, ?, ?)",
    );
    const touch = db.prepare(
      "UPDATE conversations SET updated = ? WHERE id = ?",
    );
    const addTurn = db.prepare(
      `INSERT INTO turns(id, conv, seq, user, reply, tools, messages)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    // A year of history ending at a fixed moment, so runs compare.
    const end = Date.UTC(2026, 0, 1) / 1000;
    const step = Math.max(1, Math.floor((365 * 86400) / options.turns));
    let clock = end - options.turns * step;
    let turn = 0;
    let conversation = 0;
    db.exec("BEGIN");
    while (turn < options.turns) {
      conversation++;
      const length = shape === "catalog"
        ? (conversation <= BIG_CONVERSATIONS ? BIG_TURNS : 1)
        : conversationLength(random);
      const count = Math.min(length, options.turns - turn);
      const language = text.language();
      const created = clock;
      let title = "";
      for (let seq = 1; seq <= count; seq++) {
        turn++;
        clock += step;
        const user = text.question(language);
        const reply = text.reply(language);
        const tools = text.tools();
        if (seq === 1) {
          title = user.trim().split(/\s+/).slice(0, 6).join(" ");
          addConversation.run(conversation, title, created, created);
        }
        addTurn.run(
          turn,
          conversation,
          seq,
          user,
          reply,
          JSON.stringify(tools),
          JSON.stringify(messagesOf(user, reply, tools, clock)),
        );
        if (turn % BATCH_TURNS === 0) {
          db.exec("COMMIT");
          options.progress?.(turn);
          db.exec("BEGIN");
        }
      }
      touch.run(clock, conversation);
    }
    db.exec("COMMIT");
    db.exec("PRAGMA journal_mode = WAL");
    return conversation;
  } finally {
    db.close();
  }
}

/** What the daemon stores for the model: the stamped question, tool rounds with placeholders, the answer. */
function messagesOf(
  user: string,
  reply: string,
  tools: string[],
  at: number,
): unknown[] {
  const stamp = new Date(at * 1000).toISOString().slice(0, 16).replace(
    "T",
    " ",
  );
  const messages: unknown[] = [{
    role: "user",
    content: `[${stamp} UTC+00:00] ${user}`,
  }];
  tools.forEach((name, index) => {
    const id = `call_${at}_${index}`;
    messages.push({
      role: "assistant",
      content: "",
      tool_calls: [{
        id,
        type: "function",
        function: { name, arguments: "{}" },
      }],
    });
    messages.push({
      role: "tool",
      tool_call_id: id,
      content: `[tool output: ${200 + (at % 3000)} bytes, ${
        (at % 40) + 1
      } lines, 0.${at % 10} s, exit 0]`,
    });
  });
  messages.push({ role: "assistant", content: reply });
  return messages;
}

/** The cache file of a shape, seed and size. */
export function cachePath(
  options: { seed: number; turns: number; shape?: Shape },
  dir = cacheDir(),
): string {
  return `${dir}/history-v${GENERATOR_VERSION}-${
    options.shape ?? "natural"
  }-seed${options.seed}-${options.turns}.db`;
}

/** Where generated files are kept between runs. */
export function cacheDir(): string {
  return `${Deno.env.get("TMPDIR") ?? "/tmp"}/desktop-assistant-bench`;
}

/**
 * The generated file for these options: from the cache when present, else
 * generated into `dir` (the cache by default) and kept there.
 */
export function generated(
  options: GenerateOptions,
  dir = cacheDir(),
): Generated {
  Deno.mkdirSync(dir, { recursive: true });
  const path = cachePath(options, dir);
  const counts = (seconds: number, cached: boolean): Generated => {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const row = db.prepare(
        "SELECT (SELECT count(*) FROM turns) AS turns, (SELECT count(*) FROM conversations) AS convs",
      ).get();
      return {
        path,
        turns: Number(row?.turns ?? 0),
        conversations: Number(row?.convs ?? 0),
        bytes: Deno.statSync(path).size,
        seconds,
        cached,
      };
    } finally {
      db.close();
    }
  };
  const started = performance.now();
  const cached = cachedFile(path, (partial) => {
    new Store(partial).close();
    generateInto(partial, options);
    // The store's close runs PRAGMA optimize, as the daemon does on exit.
    new Store(partial).close();
  });
  return counts(cached ? 0 : (performance.now() - started) / 1000, cached);
}

/** Copies a generated file (without its sidecars) to `target`. */
export function copyHistory(source: string, target: string): void {
  Deno.copyFileSync(source, target);
  Deno.chmodSync(target, 0o600);
}
