/**
 * The structure of an answer's text, for display. Pure (no `vscode` import, no
 * HTML): unit-tested; answerRender.ts turns it into markup.
 *
 * An extractive answer is the documents' own units, verbatim, each followed by
 * the `[n]` of its source (docs/lsp-extensions.md, `citeline/ask`):
 * - sentences of one paragraph run on in one line, `Sentence one. [1] Sentence two. [1]`;
 * - list items, table rows and code blocks start lines of their own;
 * - a table row comes under its header row and the separator line,
 *   `| a | b |` / `| --- | --- |` / `| 1 | 2 | [3]`;
 * - a code block comes whole (a fenced one with its fences), its `[n]` alone on
 *   the next line.
 * A generative answer is prose written by a model; only fenced code gets
 * structure there. While an answer streams its text may stop anywhere: an
 * unclosed fence is code up to the end.
 */

export type AnswerBlock =
  /** Lines of prose, joined with "\n" (no leading or trailing newline). */
  | { kind: 'text'; text: string }
  /** A code block: its lines without the fences; `lang` from the opening fence's info string. */
  | { kind: 'code'; code: string; lang: string }
  /** A Markdown table: header cells, and rows with the text after their last `|` (the `[n]`). */
  | { kind: 'table'; header: string[]; rows: { cells: string[]; after: string }[] };

export interface ParseOptions {
  /**
   * The text is an extractive answer: lines that end in a line holding only
   * markers are an (unfenced) code block, as the server writes preformatted
   * text from HTML pages and plain-text files.
   */
  extractive?: boolean;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})(.*)$/;
const BARE_MARKERS = /^\s*(?:\[\d{1,3}\]\s*)+$/;
const ENDS_WITH_MARKER = /\[\d{1,3}\]\s*$/;
const TABLE_SEPARATOR = /^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$/;

/** The cells of a table line `| a | b |` (outer pipes optional). */
export function tableCells(line: string): string[] {
  let s = line.trim();
  if (s.startsWith('|')) {
    s = s.slice(1);
  }
  if (s.endsWith('|') && !s.endsWith('\\|')) {
    s = s.slice(0, -1);
  }
  return s.split(/(?<!\\)\|/).map((c) => c.trim());
}

/** A table row with what follows its closing pipe: `| 1 | 2 | [3]` -> cells 1, 2 and " [3]". */
function tableRow(line: string): { cells: string[]; after: string } {
  const trimmed = line.trim();
  const last = trimmed.lastIndexOf('|');
  if (trimmed.startsWith('|') && last > 0) {
    return { cells: tableCells(trimmed.slice(0, last + 1)), after: trimmed.slice(last + 1).trim() };
  }
  return { cells: tableCells(trimmed), after: '' };
}

function isTableStart(lines: readonly string[], i: number): boolean {
  return i + 1 < lines.length && lines[i].includes('|') && TABLE_SEPARATOR.test(lines[i + 1]);
}

/** Splits an answer's text into prose, code blocks and tables, in order. */
export function parseAnswer(text: string, options: ParseOptions = {}): AnswerBlock[] {
  const lines = text.split(/\r?\n/);
  const blocks: AnswerBlock[] = [];
  let prose: string[] = [];

  const flushProse = (): void => {
    if (prose.length > 0) {
      blocks.push({ kind: 'text', text: prose.join('\n') });
      prose = [];
    }
  };

  for (let i = 0; i < lines.length; ) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1][0].repeat(3);
      const code: string[] = [];
      let j = i + 1;
      while (j < lines.length && !lines[j].trim().startsWith(marker)) {
        code.push(lines[j]);
        j++;
      }
      flushProse();
      blocks.push({ kind: 'code', code: code.join('\n'), lang: fence[2].trim().split(/\s+/)[0] ?? '' });
      i = j + 1; // past the closing fence (or the end, while streaming)
      continue;
    }
    if (isTableStart(lines, i)) {
      const header = tableCells(lines[i]);
      const rows: { cells: string[]; after: string }[] = [];
      let j = i + 2;
      while (j < lines.length && lines[j].trim().startsWith('|') && !isTableStart(lines, j)) {
        rows.push(tableRow(lines[j]));
        j++;
      }
      flushProse();
      const previous = blocks[blocks.length - 1];
      // Rows of one table, each quoted under its header: one table.
      if (previous?.kind === 'table' && previous.header.join('\u0000') === header.join('\u0000')) {
        previous.rows.push(...rows);
      } else {
        blocks.push({ kind: 'table', header, rows });
      }
      i = j;
      continue;
    }
    if (options.extractive && BARE_MARKERS.test(line) && prose.length > 0) {
      // The lines since the last unit that ended with its marker are one code unit.
      let start = prose.length;
      while (start > 0 && !ENDS_WITH_MARKER.test(prose[start - 1])) {
        start--;
      }
      if (start < prose.length) {
        const code = prose.slice(start);
        prose = prose.slice(0, start);
        flushProse();
        blocks.push({ kind: 'code', code: code.join('\n'), lang: '' });
      }
    }
    prose.push(line);
    i++;
  }
  flushProse();
  return blocks;
}

/** One run of prose: plain text or an inline code span (backticks removed). */
export type Inline = { kind: 'text'; text: string } | { kind: 'code'; text: string };

/** Splits prose at inline code spans (`` `x` ``, ``` ``x`` ```); an unclosed backtick stays text. */
export function splitInlineCode(text: string): Inline[] {
  const out: Inline[] = [];
  const re = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    const at = m.index ?? 0;
    if (at > last) {
      out.push({ kind: 'text', text: text.slice(last, at) });
    }
    out.push({ kind: 'code', text: m[2] });
    last = at + m[0].length;
  }
  if (last < text.length) {
    out.push({ kind: 'text', text: text.slice(last) });
  }
  return out;
}
