/**
 * What a config error says beyond the fact: the known key a misspelt one was
 * probably meant to be, and a TOML syntax error in a person's words (what is
 * wrong and how to fix it). Neither quotes the file: its lines may hold a
 * secret.
 */

/** Edits (insert, delete, replace, swap two neighbours) between two words. */
function distance(a: string, b: string): number {
  const rows = Array.from(
    { length: a.length + 1 },
    (_, i) => Array.from({ length: b.length + 1 }, (_, j) => i === 0 ? j : i),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Infinity;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        at(i - 1, j) + 1,
        at(i, j - 1) + 1,
        at(i - 1, j - 1) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, at(i - 2, j - 2) + 1);
      }
      rows[i]![j] = best;
    }
  }
  return at(a.length, b.length);
}

/** The known names closest to `name` (at most two, equally close), when one is close enough to be a slip. */
export function closestNames(
  name: string,
  known: Iterable<string>,
): string[] {
  const word = name.toLowerCase().replaceAll("-", "_");
  // A quarter of the word may be wrong: enough for a swapped or missed
  // letter, too little to turn one key into an unrelated one.
  const limit = Math.max(1, Math.floor(word.length / 4));
  let best = Infinity;
  let found: string[] = [];
  for (const candidate of known) {
    const edits = distance(word, candidate);
    if (edits > limit || edits > best) continue;
    if (edits < best) found = [];
    best = edits;
    found.push(candidate);
  }
  return found.length > 2 ? [] : found;
}

/** `: did you mean "x"?` (or `"x" or "y"`) when a known name is close to `name`, else "". */
export function didYouMean(name: string, known: Iterable<string>): string {
  const names = closestNames(name, known);
  if (names.length === 0) return "";
  return `: did you mean ${names.map((n) => JSON.stringify(n)).join(" or ")}?`;
}

const KEY_VALUE =
  'expected key = value or a [table] header here: a key is letters, digits, "_" and "-" (quote any other key), then "=" and the value';

const UNCLOSED_STRING =
  'this string is not closed: end it with the quote it starts with, on the same line (""" starts text over several lines)';

/** smol-toml's reasons for a fault in a header or a key. */
const KEY_REASONS = new Set([
  "illegal character in key",
  "incomplete key-value: cannot find end of key",
  "unexpected end of key",
  "illegal empty bare key",
  "expected end of table array declaration",
]);

/** What is wrong in a `[table]` header, from smol-toml's reason and the line it names. */
function headerFault(reason: string, line: string): string {
  if (reason === "expected end of table array declaration") {
    return 'this array-of-tables header is not closed: end it with "]]"';
  }
  if (reason === "unexpected end of key") {
    return "this table header has no name: write it between the brackets, as in [request]";
  }
  if (reason === "illegal empty bare key") {
    return "this table name has an empty part (two dots in a row, or a dot at an end): remove the extra dot";
  }
  if (!line.includes("]")) {
    return 'this table header is not closed: end it with "]", as in [request]';
  }
  return 'this table name holds a character a name may not: use letters, digits, "_" and "-", or quote the name, as in [mcp."my server"]';
}

/** What is wrong in a key, from smol-toml's reason. */
function keyFault(reason: string): string {
  if (reason === "unexpected end of key") {
    return 'this line has no key before "=": write key = value';
  }
  if (reason === "illegal empty bare key") {
    return "this dotted key has an empty part (two dots in a row, or a dot at an end): remove the extra dot";
  }
  return KEY_VALUE;
}

/** Each of smol-toml's reasons outside keys, in a person's words. */
const VALUE_FAULTS: [RegExp, string][] = [
  [
    /^invalid value$/,
    'this value is not one TOML knows: put text in double quotes ("…"); numbers, true, false, [arrays] and {tables} go without',
  ],
  [/^unfinished string$/, UNCLOSED_STRING],
  [/^unfinished array$/, 'this array is not closed: end it with "]"'],
  [
    /^unfinished table$/,
    'this inline table is not closed: end it with "}" on the same line',
  ],
  [
    /^expected comma or end of structure$/,
    'an array or inline table here misses a "," between two items, or its closing bracket',
  ],
  [
    /^each key-value declaration must be followed by an end-of-line$/,
    "something follows on this line: put each key = value and each [table] header on a line of its own (a comment starts with #)",
  ],
  [
    /^trying to redefine/,
    "this key or table is already set earlier in the file: keep one of the two",
  ],
  [
    /^illegal leading zero$/,
    "a number may not start with 0: write 8, not 08",
  ],
  [
    /^illegal underscore$/,
    'an "_" in a number must stand between two digits',
  ],
  [
    /numeric/,
    'this number is not valid: write digits, with at most one "." (and an exponent, as in 1e6)',
  ],
  [
    /^integer value cannot be represented losslessly$/,
    "this integer is too large: at most 9007199254740991",
  ],
  [
    /date/,
    "this date or time is not valid: write it as 2026-12-01, 09:30:00 or 2026-12-01T09:30:00",
  ],
  [
    /escape/,
    "a backslash in a double-quoted string starts an escape: write \\\\ for a backslash, or use single quotes ('…'), which keep text as written",
  ],
  [
    /^control characters are not allowed/,
    "a control character is not allowed here: remove it (in a string, write it as an escape such as \\t)",
  ],
  [
    /nested/,
    "the values nest too deep: flatten them",
  ],
];

/**
 * A TOML syntax error in a person's words: what is wrong and how to fix it,
 * from smol-toml's reason and the line and column it names (the line is read,
 * never quoted).
 */
export function tomlFault(
  reason: string,
  line: string,
  column: number,
): string {
  if (KEY_REASONS.has(reason)) {
    return /^\s*\[/.test(line) ? headerFault(reason, line) : keyFault(reason);
  }
  // The control character past the line's end is its line break: a string
  // left open, the commoner slip by far.
  if (reason.startsWith("control characters") && column > line.length) {
    return UNCLOSED_STRING;
  }
  for (const [pattern, words] of VALUE_FAULTS) {
    if (pattern.test(reason)) return words;
  }
  // A reason a newer smol-toml added: a fixed phrase of its own, never a
  // piece of the file.
  return `${reason}: fix the TOML syntax here`;
}
