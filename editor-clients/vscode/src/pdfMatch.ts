/**
 * Which text of a PDF page to highlight for a citation: the page's text items
 * (as pdf.js gives them) that hold the cited passage, or the answer's quoted
 * sentences. Pure (no `vscode`, no DOM): unit-tested, and bundled into the PDF
 * viewer's webview script.
 *
 * Matching is by runs of words, not by exact strings: a PDF's text items split
 * lines and words anywhere, hyphenate, and space differently from the text the
 * index holds.
 */

/** What the matcher needs of a pdf.js TextItem. */
export interface TextItemLike {
  str: string;
}

interface Token {
  word: string;
  /** The items the word's characters come from. */
  items: number[];
}

const CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]/;

/** Lower-cased words (letters and digits); each CJK character is a word of its own. */
export function words(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (!raw) {
      continue;
    }
    if (CJK.test(raw)) {
      let run = '';
      for (const ch of raw) {
        if (CJK.test(ch)) {
          if (run) {
            out.push(run);
            run = '';
          }
          out.push(ch);
        } else {
          run += ch;
        }
      }
      if (run) {
        out.push(run);
      }
    } else {
      out.push(raw);
    }
  }
  return out;
}

/**
 * The page's words, each with the items it comes from. Items are joined with a
 * space, except after a hyphen at a line end ("exam-" + "ple": one word).
 */
function pageTokens(items: readonly TextItemLike[]): Token[] {
  let text = '';
  const owner: number[] = [];
  items.forEach((it, item) => {
    let str = it.str ?? '';
    if (text.endsWith('-') && /^[\p{L}]/u.test(str) && /[\p{L}]-$/u.test(text)) {
      text = text.slice(0, -1);
      owner.pop();
    } else if (text && !/\s$/.test(text)) {
      text += ' ';
      owner.push(-1);
    }
    str = str.normalize('NFKC');
    for (const ch of str) {
      text += ch;
      for (let i = 0; i < ch.length; i++) owner.push(item);
    }
  });
  const tokens: Token[] = [];
  const re = /[\p{L}\p{N}]+/gu;
  for (const m of text.matchAll(re)) {
    const at = m.index ?? 0;
    const covered = new Set<number>();
    for (let i = at; i < at + m[0].length; i++) {
      if (owner[i] >= 0) covered.add(owner[i]);
    }
    const pieces = words(m[0]);
    if (pieces.length === 1) {
      tokens.push({ word: pieces[0], items: [...covered] });
    } else {
      // CJK runs: one token per character, each with its own item.
      let offset = at;
      for (const w of pieces) {
        const i = text.indexOf(w, offset);
        tokens.push({ word: w, items: i >= 0 && owner[i] >= 0 ? [owner[i]] : [...covered] });
        offset = i >= 0 ? i + w.length : offset;
      }
    }
  }
  return tokens;
}

/**
 * Indexes of the items that hold `passage`'s text: every run of `window` words
 * (default 5, fewer for a short passage) found on the page marks the items it
 * spans. Empty when nothing matches.
 */
export function matchItems(items: readonly TextItemLike[], passage: string, window = 5): number[] {
  const want = words(passage);
  if (want.length === 0) {
    return [];
  }
  const tokens = pageTokens(items);
  const k = Math.max(1, Math.min(window, want.length));
  const grams = new Map<string, number[]>();
  for (let i = 0; i + k <= tokens.length; i++) {
    const key = tokens
      .slice(i, i + k)
      .map((t) => t.word)
      .join(' ');
    const list = grams.get(key);
    if (list) {
      list.push(i);
    } else {
      grams.set(key, [i]);
    }
  }
  const marked = new Set<number>();
  for (let i = 0; i + k <= want.length; i++) {
    for (const start of grams.get(want.slice(i, i + k).join(' ')) ?? []) {
      for (let j = start; j < start + k; j++) {
        for (const item of tokens[j].items) marked.add(item);
      }
    }
  }
  return [...marked].sort((a, b) => a - b);
}

/** The units of an extractive answer that cite `[n]`: the text before each `[n]` marker, since the previous marker. */
export function quotedUnits(answer: string, n: number): string[] {
  const out: string[] = [];
  let last = 0;
  for (const m of answer.matchAll(/\[(\d{1,3})\]/g)) {
    const at = m.index ?? 0;
    const unit = answer.slice(last, at).replace(/^[\s\]]+/, '').trim();
    if (Number(m[1]) === n && unit) {
      out.push(unit.replace(/^```[^\n]*\n|```\s*$/g, '').trim());
    }
    last = at + m[0].length;
  }
  return out.filter(Boolean);
}

/** What a PDF citation's viewer highlights: the cited passage, and the answer's sentences that cite it. */
export interface CitedText {
  passage?: string;
  quotes: string[];
}

interface LocatedLike {
  path: string;
  page: number | null;
  text?: string;
  n?: number;
}

/**
 * The text to highlight for a citation or hit: its own `text` (hits always;
 * citations from servers that send it), else the text of the answer's hit on the
 * same page of the same file; and, for a citation, the answer's units that cite it.
 */
export function citedText(located: LocatedLike, answer?: { answer?: string; hits?: readonly LocatedLike[] }): CitedText {
  const hit = (answer?.hits ?? []).find((h) => h.path === located.path && h.page === located.page && typeof h.text === 'string');
  const passage = typeof located.text === 'string' && located.text ? located.text : hit?.text;
  const quotes = typeof located.n === 'number' && typeof answer?.answer === 'string' ? quotedUnits(answer.answer, located.n) : [];
  return { ...(passage ? { passage } : {}), quotes };
}
