/**
 * "Copy answer": an answer as Markdown to take elsewhere — the question, the
 * grade when it is not a plain answer, the answer text with its `[n]` markers,
 * and the sources as `file:line` / page links. Pure (no `vscode` import): unit-tested.
 */
import { gradeView } from './answerRender';
import { stripFragment, type Located } from './citations';
import type { Answer, Citation, Hit } from './protocol';

/** What a copied answer is made from. */
export interface CopySource {
  question: string;
  answer: Answer;
  /** Reopened from history: when it was asked, and whether its sources changed since. */
  recorded?: { time: string; stale: boolean };
}

/** Text safe inside a Markdown link label. */
function label(text: string): string {
  return text.replace(/([\\[\]])/g, '\\$1');
}

/** A link target safe inside `(…)`: the URI's own percent-encoding, plus parentheses and spaces. */
function target(uri: string): string {
  return uri.replace(/ /g, '%20').replace(/\(/g, '%28').replace(/\)/g, '%29');
}

/** `getting-started.md:103-107`, `notes.txt:12` or `guide.pdf, page 3`: where a source is, compactly. */
export function sourcePlace(c: Located): string {
  if (c.page !== null && c.page !== undefined) {
    return `${c.path}, page ${c.page}`;
  }
  if (c.start_line !== null && c.start_line !== undefined) {
    const end = c.end_line ?? c.start_line;
    return end > c.start_line ? `${c.path}:${c.start_line}-${end}` : `${c.path}:${c.start_line}`;
  }
  return c.path;
}

/** The link a source opens: `file:///…/doc.md#L103-L107` or `file:///…/guide.pdf#page=3`. */
export function sourceLink(c: Located): string {
  const { base } = stripFragment(c.uri);
  if (c.page !== null && c.page !== undefined) {
    return `${base}#page=${c.page}`;
  }
  if (c.start_line !== null && c.start_line !== undefined) {
    const end = c.end_line ?? c.start_line;
    return end > c.start_line ? `${base}#L${c.start_line}-L${end}` : `${base}#L${c.start_line}`;
  }
  return base;
}

function sourceLine(prefix: string, c: Citation | Hit): string {
  const section = c.section ? ` — ${c.section}` : '';
  const changed = (c as Citation).changed ? ' (changed since)' : '';
  return `${prefix}[${label(sourcePlace(c))}](${target(sourceLink(c))})${section}${changed}`;
}

/** The Markdown "Copy answer" puts on the clipboard. */
export function answerMarkdown(source: CopySource): string {
  const a = source.answer;
  const out: string[] = [`## ${source.question.replace(/\s+/g, ' ').trim()}`, ''];
  const grade = gradeView(a);
  if (source.recorded) {
    const stale = source.recorded.stale ? '; its sources changed since' : '';
    out.push(`*From Citeline's history, asked ${source.recorded.time}${stale}.*`, '');
  }
  if (a.refused) {
    out.push(`**${grade?.text ?? 'Not found in the documents'}.**`.replace(/\.\.\*\*$/, '.**'), '');
    const hits = a.hits ?? [];
    if (hits.length > 0) {
      out.push('Nearest passages:', '');
      for (const h of hits.slice(0, 3)) {
        out.push(sourceLine('- ', h));
      }
      out.push('');
    }
    return `${out.join('\n').trimEnd()}\n`;
  }
  if (grade && grade.grade !== 'answer') {
    out.push(`> **${grade.text}**`, '');
  }
  out.push((a.answer ?? '').trimEnd(), '');
  const citations = a.citations ?? [];
  if (citations.length > 0) {
    out.push('Sources:', '');
    for (const c of citations) {
      out.push(sourceLine(`- [${c.n}] `, c));
    }
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}
