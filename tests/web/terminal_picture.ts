/**
 * A terminal's screen as a picture: a program's output goes through
 * xterm.js (headless), and each cell is written out as HTML with its
 * colours and style, which Chromium then photographs. The colours are a
 * common dark terminal theme.
 */
import xterm from "../support/xterm.ts";

const { Terminal } = xterm;

/** The 16 palette colours of the theme (black, red, …, bright white). */
const PALETTE = [
  "#1e1e1e",
  "#e06c75",
  "#98c379",
  "#e5c07b",
  "#61afef",
  "#c678dd",
  "#56b6c2",
  "#d0d0d0",
  "#7f848e",
  "#ff7b86",
  "#b5e890",
  "#ffd68a",
  "#8cc8ff",
  "#e19ef5",
  "#7fdce8",
  "#ffffff",
];
const FOREGROUND = "#d4d4d4";
const BACKGROUND = "#1e1e1e";

/** A colour of xterm's 256-colour palette. */
function palette(index: number): string {
  if (index < 16) return PALETTE[index]!;
  if (index >= 232) {
    const level = 8 + (index - 232) * 10;
    return `rgb(${level},${level},${level})`;
  }
  const n = index - 16;
  const steps = [0, 95, 135, 175, 215, 255];
  return `rgb(${steps[Math.floor(n / 36)]},${steps[Math.floor(n / 6) % 6]},${
    steps[n % 6]
  })`;
}

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(
    />/g,
    "&gt;",
  );
}

type Cell = {
  getChars(): string;
  getWidth(): number;
  isBold(): number;
  isDim(): number;
  isItalic(): number;
  isUnderline(): number;
  isInverse(): number;
  isFgPalette(): boolean;
  isFgRGB(): boolean;
  isBgPalette(): boolean;
  isBgRGB(): boolean;
  getFgColor(): number;
  getBgColor(): number;
};

function color(cell: Cell, fg: boolean): string | null {
  const value = fg ? cell.getFgColor() : cell.getBgColor();
  if (fg ? cell.isFgPalette() : cell.isBgPalette()) return palette(value);
  if (fg ? cell.isFgRGB() : cell.isBgRGB()) {
    return `#${value.toString(16).padStart(6, "0")}`;
  }
  return null;
}

function cellStyle(cell: Cell): string {
  let fg = color(cell, true) ?? FOREGROUND;
  let bg = color(cell, false);
  if (cell.isInverse()) [fg, bg] = [bg ?? BACKGROUND, fg];
  const parts = [`color:${fg}`];
  if (bg) parts.push(`background:${bg}`);
  if (cell.isBold()) parts.push("font-weight:bold");
  if (cell.isDim()) parts.push("opacity:0.6");
  if (cell.isItalic()) parts.push("font-style:italic");
  if (cell.isUnderline()) parts.push("text-decoration:underline");
  return parts.join(";");
}

/** The HTML page of what a terminal of `columns` shows for `output`, scrollback included. */
export async function terminalHtml(
  output: string,
  columns: number,
  title: string,
): Promise<string> {
  const terminal = new Terminal({
    cols: columns,
    rows: 50,
    scrollback: 10_000,
    allowProposedApi: true,
    convertEol: true,
  });
  try {
    await new Promise<void>((resolve) => terminal.write(output, resolve));
    const buffer = terminal.buffer.active;
    const rows: string[] = [];
    for (let y = 0; y < buffer.length; y++) {
      const line = buffer.getLine(y);
      if (!line) continue;
      let html = "";
      for (let x = 0; x < columns; x++) {
        const cell = line.getCell(x) as Cell | undefined;
        if (!cell || cell.getWidth() === 0) continue;
        html += `<span style="${cellStyle(cell)}">${
          escape(cell.getChars() || " ")
        }</span>`;
      }
      rows.push(html);
    }
    while (rows.length > 0 && !/>[^ <]<\/span>/.test(rows.at(-1)!)) {
      rows.pop();
    }
    return `<!doctype html><meta charset="utf-8"><style>
      body { margin: 0; background: #0f1115; }
      .window { margin: 16px; border-radius: 10px; overflow: hidden;
        background: ${BACKGROUND}; box-shadow: 0 8px 30px rgb(0 0 0 / 0.5);
        width: max-content; }
      .bar { background: #2b2d31; color: #b9bcc2; font: 13px system-ui, sans-serif;
        padding: 7px 12px; text-align: center; }
      pre { margin: 0; padding: 10px 14px 14px; color: ${FOREGROUND};
        font: 14px/1.2 "DejaVu Sans Mono", monospace; }
    </style><div class="window"><div class="bar">${escape(title)}</div><pre>${
      rows.join("\n")
    }</pre></div>`;
  } finally {
    terminal.dispose();
  }
}
