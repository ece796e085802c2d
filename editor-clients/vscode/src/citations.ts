/**
 * Citation locations and link targets. Pure (no `vscode` import): unit-tested.
 */
import type { Citation, Hit, LocalCopy, Range } from './protocol';

/** The common part of a citation and a hit: where a passage is. */
export type Located = Pick<Citation, 'path' | 'section' | 'page' | 'start_line' | 'end_line' | 'uri'> & {
  range?: Range;
  title?: string | null;
  local_copy?: LocalCopy;
  /** The server's words for a local copy that is not the indexed one. */
  local_copy_note?: string | null;
  /** The passage from the index (hits always; citations when the local copy differs). */
  text?: string;
};

/**
 * Whether a citation must not jump into the local file: the folder's copy is not the
 * one the (team) index holds, so its lines may say something else.
 */
export function localCopyDiffers(c: Located): boolean {
  return c.local_copy === 'differs' || c.local_copy === 'missing';
}

/** What to show instead of a jump: the indexed passage, and why it is shown (the server's `local_copy_note`). */
export function passageMarkdown(c: Located): string {
  const why = `\`${c.path}\`: ${c.local_copy_note ?? c.local_copy ?? ''}.`;
  const quoted = (c.text ?? '(the index sent no passage text)')
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return `# ${fullLocation(c)}\n\n_${why} This is the passage as the team index holds it._\n\n${quoted}\n`;
}

/** "page 3", "lines 40–47", "line 12" or "" (en dash between line numbers). */
export function whereLabel(c: Located): string {
  if (c.page !== null && c.page !== undefined) {
    return `page ${c.page}`;
  }
  if (c.start_line !== null && c.start_line !== undefined) {
    const end = c.end_line ?? c.start_line;
    return end > c.start_line ? `lines ${c.start_line}–${end}` : `line ${c.start_line}`;
  }
  return '';
}

/** "getting-started.md, lines 40–47" */
export function shortLocation(c: Located): string {
  const where = whereLabel(c);
  return where ? `${c.path}, ${where}` : c.path;
}

/** "getting-started.md § Getting started > Where things live, lines 40–47" */
export function fullLocation(c: Located): string {
  const parts = [c.path];
  if (c.section) {
    parts[0] += ` § ${c.section}`;
  }
  const where = whereLabel(c);
  if (where) {
    parts.push(where);
  }
  return parts.join(', ');
}

/** "getting-started.md:40" or "guide.pdf#page=3": compact, for quick picks. */
export function compactLocation(c: Located): string {
  if (c.page !== null && c.page !== undefined) {
    return `${c.path} (page ${c.page})`;
  }
  if (c.start_line !== null && c.start_line !== undefined) {
    return `${c.path}:${c.start_line}`;
  }
  return c.path;
}

export function isPdf(c: Located): boolean {
  return (c.page !== null && c.page !== undefined) || /\.pdf(#.*)?$/i.test(c.uri) || /\.pdf$/i.test(c.path);
}

/** Where to go for a citation or hit. Lines are 0-based and inclusive. */
export type CitationTarget =
  | { kind: 'text'; uri: string; startLine: number; endLine: number; startCharacter: number; endCharacter: number | 'eol' }
  | { kind: 'pdf'; uri: string; page: number };

/** Splits a URI's `#fragment` off. */
export function stripFragment(uri: string): { base: string; fragment: string } {
  const i = uri.indexOf('#');
  return i < 0 ? { base: uri, fragment: '' } : { base: uri.slice(0, i), fragment: uri.slice(i + 1) };
}

/**
 * The range to select for a citation. The contract's range covers whole lines,
 * `(start_line - 1, 0)` to `(end_line, 0)`; the editor selects through the end
 * of the last cited line instead, so the cursor stays on a cited line.
 */
export function citationTarget(c: Located): CitationTarget {
  const { base, fragment } = stripFragment(c.uri);
  if (isPdf(c)) {
    const fromFragment = /(?:^|&)page=(\d+)/.exec(fragment);
    const page = c.page ?? (fromFragment ? Number(fromFragment[1]) : 1);
    return { kind: 'pdf', uri: base, page: Math.max(1, page) };
  }
  if (c.start_line !== null && c.start_line !== undefined && c.start_line >= 1) {
    const start = c.start_line - 1;
    const end = Math.max(start, (c.end_line ?? c.start_line) - 1);
    return { kind: 'text', uri: base, startLine: start, endLine: end, startCharacter: 0, endCharacter: 'eol' };
  }
  const r = c.range;
  if (r) {
    // A range ending at character 0 of a later line ends on the line before.
    let endLine = r.end.line;
    let endCharacter: number | 'eol' = r.end.character;
    if (endCharacter === 0 && endLine > r.start.line) {
      endLine -= 1;
      endCharacter = 'eol';
    }
    return { kind: 'text', uri: base, startLine: r.start.line, endLine, startCharacter: r.start.character, endCharacter };
  }
  return { kind: 'text', uri: base, startLine: 0, endLine: 0, startCharacter: 0, endCharacter: 0 };
}

/** A PDF URI with the `#page=N` open-parameter most viewers understand. */
export function pdfPageUri(uri: string, page: number): string {
  return `${stripFragment(uri).base}#page=${page}`;
}

/** One `[n]` marker or a run of text, in order. */
export type Segment = { kind: 'text'; text: string } | { kind: 'marker'; n: number };

const MARKER = /\[(\d{1,3})\]/g;

/** Splits answer text into text runs and `[n]` markers. */
export function splitMarkers(text: string): Segment[] {
  const out: Segment[] = [];
  let last = 0;
  for (const m of text.matchAll(MARKER)) {
    const at = m.index ?? 0;
    if (at > last) {
      out.push({ kind: 'text', text: text.slice(last, at) });
    }
    out.push({ kind: 'marker', n: Number(m[1]) });
    last = at + m[0].length;
  }
  if (last < text.length) {
    out.push({ kind: 'text', text: text.slice(last) });
  }
  return out;
}

/** Items of the "Search Selection" quick pick. */
export interface PickItem {
  label: string;
  description: string;
  detail: string;
}

export function oneLine(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The similarity to show for a hit: its dense (cosine) score when the daemon sends one, else its score. */
export function similarity(hit: Pick<Hit, 'score' | 'dense'>): number | undefined {
  if (typeof hit.dense === 'number' && Number.isFinite(hit.dense)) {
    return hit.dense;
  }
  return typeof hit.score === 'number' && Number.isFinite(hit.score) ? hit.score : undefined;
}

export function hitPickItem(hit: Hit): PickItem {
  const sim = similarity(hit);
  const score = sim === undefined ? '' : ` · ${sim.toFixed(2)}`;
  return {
    label: compactLocation(hit),
    description: `${hit.section ?? hit.title ?? ''}${score}`.trim(),
    detail: oneLine(hit.text ?? ''),
  };
}
