/** A chat session over a stand-in connection, for the chat tests that feed it events. */
import { Renderer } from "../../src/clients/chat_render.ts";
import { ChatSession } from "../../src/clients/chat_session.ts";
import type { WriteFile } from "../../src/clients/chat_export.ts";
import type { FileSource } from "../../src/clients/attachments.ts";
import type { InputLog } from "../../src/clients/chat_history.ts";
import type { DaemonClient, HelloEvent } from "../../src/clients/client.ts";
import { LineEditor } from "../../src/clients/line_editor.ts";
import type { Command, TurnView } from "../../src/protocol/protocol.ts";
import { idleHello } from "../support/hello_fixture.ts";

/** How the stand-in session is made. */
export interface Options {
  /** A raw-mode line editor, so the prompt is drawn. */
  editor?: boolean;
  /** The current conversation's turns (then its id is 1). */
  turns?: TurnView[];
  /** More of the greeting. */
  hello?: Partial<HelloEvent>;
  colors?: boolean;
  writeFile?: WriteFile;
  exportDir?: string;
  /** Where `/attach` reads files. */
  files?: FileSource;
  /** Keeps typed lines for the next run. */
  inputLog?: InputLog;
}

/** A session over a stand-in connection that records what it sends and shows. */
export function session(options: Options = {}) {
  const sent: Command[] = [];
  let refs = 0;
  let screen = "";
  const hello: HelloEvent = idleHello({
    id: options.turns ? 1 : null,
    turns: options.turns ?? [],
    ...options.hello,
  });
  const client = {
    hello,
    nextRef: () => `ref-${++refs}`,
    send: (command: Command) => {
      sent.push(command);
      return Promise.resolve();
    },
  } as unknown as DaemonClient;
  const editor = options.editor ? new LineEditor() : null;
  const chat = new ChatSession({
    client,
    renderer: new Renderer({ colors: options.colors ?? false, think: true }),
    editor,
    out: (text) => screen += text,
    err: () => {},
    prompt: "> ",
    columns: () => 80,
    ...(options.writeFile ? { writeFile: options.writeFile } : {}),
    ...(options.exportDir ? { exportDir: options.exportDir } : {}),
    ...(options.files ? { files: options.files } : {}),
    ...(options.inputLog ? { inputLog: options.inputLog } : {}),
  });
  return { chat, sent, editor, screen: () => screen };
}

/** Plays a whole turn of the daemon's, with the ref of the command that started it. */
export function playTurn(
  chat: ChatSession,
  text: string,
  ref: string | undefined,
  reply: string,
  extra: { replaces?: true } = {},
): void {
  const refs = ref === undefined ? {} : { ref };
  chat.onEvent({ type: "user", text, ...extra, ...refs });
  chat.onEvent({ type: "state", state: "thinking" });
  chat.onEvent({ type: "token", delta: reply });
  chat.onEvent({ type: "done", id: 1, stopped: false, ...extra, ...refs });
  chat.onEvent({ type: "state", state: "idle" });
}

/** What the prompt line says now: the line the editor drew last, before the cursor moves back into it. */
export function promptShown(screen: string): string {
  // deno-lint-ignore no-control-regex
  const drawn = [...screen.matchAll(/\r([^\r]*)\x1b\[K(?=\r)/g)].at(-1);
  return drawn?.[1] ?? "";
}
