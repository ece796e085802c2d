/**
 * Turns questions and answers into the answer panel's HTML. Pure (no `vscode`
 * import): unit-tested.
 *
 * Everything that comes from the server (answer text quoted from documents or
 * written by a model, paths, section titles, error messages) is escaped; the
 * only markup is ours. `[n]` markers become links (`data-kind="citation"`) that
 * the panel's script turns into "open this citation" messages; code blocks and
 * tables in the answer (answerMarkup.ts) become <pre> and <table>.
 */
import { randomBytes } from 'node:crypto';

import { parseAnswer, splitInlineCode } from './answerMarkup';
import { fullLocation, similarity, splitMarkers, whereLabel } from './citations';
import type { Answer, Citation, Grade, Hit } from './protocol';

export type EntryState = 'streaming' | 'done' | 'cancelled' | 'error';

/** One question in the panel's history. */
export interface AnswerEntry {
  id: string;
  question: string;
  state: EntryState;
  /** Streamed text so far; the final answer text once done. */
  text: string;
  answer?: Answer;
  error?: string;
  /** ms since epoch */
  startedAt: number;
  finishedAt?: number;
  /** Reopened from the server's history: when it was asked, and whether its sources changed since. */
  recorded?: { id: string; time: string; stale: boolean };
}

/**
 * The entry once its request completed: the final answer's text replaces what
 * streamed (a generative answer settles: sentences the check removed are gone).
 */
export function settle(entry: AnswerEntry, answer: Answer): void {
  entry.answer = answer;
  entry.text = typeof answer?.answer === 'string' ? answer.answer : entry.text;
  entry.state = 'done';
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** Escapes text for HTML element content and (quoted) attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"'`]/g, (c) => ESCAPES[c] ?? c);
}

function attr(name: string, value: unknown): string {
  return `${name}="${escapeHtml(value)}"`;
}

/** data-path and data-lines ("start-end") or data-page: where a link goes, for tests and styling. */
function placeAttrs(c: Citation | Hit): string {
  const out = [attr('data-path', c.path)];
  if (c.page !== null && c.page !== undefined) {
    out.push(attr('data-page', c.page));
  } else if (c.start_line !== null && c.start_line !== undefined) {
    out.push(attr('data-lines', `${c.start_line}-${c.end_line ?? c.start_line}`));
  }
  return out.join(' ');
}

/** Prose with `[n]` markers as links to their citations (markers inside inline code stay code). */
function renderProse(text: string, entryId: string, citations: readonly Citation[]): string {
  return splitInlineCode(text)
    .map((run) => (run.kind === 'code' ? `<code>${escapeHtml(run.text)}</code>` : renderMarkers(run.text, entryId, citations)))
    .join('');
}

function renderMarkers(text: string, entryId: string, citations: readonly Citation[]): string {
  return splitMarkers(text)
    .map((seg) => {
      if (seg.kind === 'text') {
        return escapeHtml(seg.text);
      }
      const index = citations.findIndex((c) => c.n === seg.n);
      if (index < 0) {
        return `<span class="marker">[${seg.n}]</span>`;
      }
      const c = citations[index];
      return (
        `<a href="#" class="marker" ${attr('data-entry', entryId)} data-kind="citation" ${attr('data-index', index)} ${placeAttrs(c)}` +
        ` ${attr('title', `Open ${fullLocation(c)}`)}>[${seg.n}]</a>`
      );
    })
    .join('');
}

/**
 * Answer text as markup: prose keeps its line breaks (the panel's CSS), `[n]`
 * markers link to their citations, inline code is <code>, a code block is
 * <pre><code> (no links inside), a table is a <table> whose rows end with their
 * markers. `extractive`: the text is an extractive answer (see answerMarkup.ts).
 */
export function renderAnswerText(text: string, entryId: string, citations: readonly Citation[], options: { extractive?: boolean } = {}): string {
  return parseAnswer(text, { extractive: options.extractive })
    .map((block) => {
      switch (block.kind) {
        case 'text':
          return renderProse(block.text, entryId, citations);
        case 'code':
          return `<pre class="code"${block.lang ? ` ${attr('data-lang', block.lang)}` : ''}><code>${escapeHtml(block.code)}</code></pre>`;
        case 'table': {
          const width = Math.max(block.header.length, ...block.rows.map((r) => r.cells.length));
          const pad = (cells: readonly string[]): string[] => [...cells, ...Array<string>(Math.max(0, width - cells.length)).fill('')];
          const head = pad(block.header).map((h) => `<th>${renderProse(h, entryId, citations)}</th>`).join('');
          const rows = block.rows
            .map((r) => {
              const cells = pad(r.cells).map((c) => `<td>${renderProse(c, entryId, citations)}</td>`).join('');
              return `<tr>${cells}<td class="cite-cell">${renderProse(r.after, entryId, citations)}</td></tr>`;
            })
            .join('');
          return `<table class="quoted"><thead><tr>${head}<th class="cite-cell"></th></tr></thead><tbody>${rows}</tbody></table>`;
        }
      }
    })
    .join('');
}

function locationParts(c: Citation | Hit): string {
  const parts = [`<span class="path">${escapeHtml(c.path)}</span>`];
  if (c.section) {
    parts.push(`<span class="section">§ ${escapeHtml(c.section)}</span>`);
  }
  const where = whereLabel(c);
  if (where) {
    parts.push(`<span class="where">${escapeHtml(where)}</span>`);
  }
  return parts.join(' ');
}

/** The numbered list of citations under an answer: the sources its `[n]` markers point at. */
export function renderCitations(entryId: string, citations: readonly Citation[]): string {
  if (citations.length === 0) {
    return '';
  }
  const items = citations.map(
    (c, index) =>
      `<li class="citation"><a href="#" class="cite" ${attr('data-entry', entryId)} data-kind="citation" ${attr('data-index', index)} ${placeAttrs(c)}` +
      ` ${attr('title', `Open ${fullLocation(c)}`)}><span class="n">[${c.n}]</span> ${locationParts(c)}</a>` +
      `${c.changed ? ' <span class="changed" title="This source changed or vanished since the answer">changed since</span>' : ''}</li>`,
  );
  return `<h3>Sources</h3><ol class="citations">${items.join('')}</ol>`;
}

/** Nearest passages, shown under a refusal (they are not citations). */
export function renderHits(entryId: string, hits: readonly Hit[], max = 3): string {
  if (hits.length === 0) {
    return '';
  }
  const items = hits.slice(0, max).map((h, index) => {
    const sim = similarity(h);
    const score = sim === undefined ? '' : ` <span class="score">${escapeHtml(sim.toFixed(2))}</span>`;
    return (
      `<li class="hit"><a href="#" class="cite" ${attr('data-entry', entryId)} data-kind="hit" ${attr('data-index', index)} ${placeAttrs(h)}` +
      ` ${attr('title', `Open ${fullLocation(h)}`)}>${locationParts(h)}</a>${score}</li>`
    );
  });
  return `<h3>Nearest passages</h3><ol class="hits">${items.join('')}</ol>`;
}

/** What the small label over an answer says: how it was made, and why when it fell back (the server's texts). */
export interface AnswerLabel {
  mode: 'extractive' | 'generative';
  text: string;
  /** Why a generative ask answered with the documents' own sentences. */
  note?: string;
  /** Longer explanation, for a tooltip. */
  detail: string;
}

/** The label for a finished answer: the server's `mode_label` and `fallback_note`; undefined for a refusal (or a server that does not say). */
export function answerLabel(answer: Answer | undefined): AnswerLabel | undefined {
  const text = typeof answer?.mode_label === 'string' ? answer.mode_label.trim() : '';
  if (!answer || answer.refused || !text || (answer.mode !== 'generative' && answer.mode !== 'extractive')) {
    return undefined;
  }
  const note = typeof answer.fallback_note === 'string' && answer.fallback_note.trim() ? answer.fallback_note : undefined;
  if (answer.mode === 'generative') {
    return { mode: 'generative', text, note, detail: 'Every sentence was checked against the passage it cites; sentences the sources did not support were removed.' };
  }
  const confidence =
    typeof answer.confidence === 'number' && Number.isFinite(answer.confidence) ? ` Confidence that it answers the question: ${Math.round(answer.confidence * 100)}%.` : '';
  return { mode: 'extractive', text, note, detail: `The answer is the documents' own sentences, verbatim; each [n] opens its source.${confidence}` };
}

/** The answer's grade as shown: the server's `grade_label` verbatim; `prominent` for the closest passages. */
export interface GradeView {
  grade: Grade | string;
  text: string;
  prominent: boolean;
}

/**
 * The grade to show over an answer, or undefined for a server that does not grade
 * (wire agreement A). The text is the server's `grade_label`, verbatim.
 */
export function gradeView(answer: Answer | undefined): GradeView | undefined {
  if (!answer || typeof answer.grade !== 'string' || !answer.grade) {
    return undefined;
  }
  const label = typeof answer.grade_label === 'string' ? answer.grade_label.trim() : '';
  if (!label) {
    return undefined;
  }
  return { grade: answer.grade, text: label, prominent: answer.grade === 'closest' };
}

function renderGrade(view: GradeView): string {
  const cls = `grade grade-${view.grade.replace(/[^a-z-]/gi, '')}${view.prominent ? ' prominent' : ''}`;
  const icon = view.prominent ? '<span class="grade-icon" aria-hidden="true">⚠</span> ' : '';
  return `<div ${attr('class', cls)} ${attr('data-grade', view.grade)} role="${view.prominent ? 'alert' : 'note'}">${icon}<span class="grade-text">${escapeHtml(view.text)}</span></div>`;
}

/** "Asked 2026-12-01 23:10 UTC" and, when a source changed since, a warning. */
function renderRecorded(entry: AnswerEntry): string {
  const r = entry.recorded;
  if (!r) {
    return '';
  }
  const when = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(r.time) ? `${r.time.slice(0, 10)} ${r.time.slice(11, 16)} UTC` : r.time;
  const stale = r.stale
    ? '<div class="stale" role="alert">Its sources changed since this answer: the cited lines may no longer say this. Ask again for a current answer.</div>'
    : '';
  return `<div class="recorded">From history · asked ${escapeHtml(when)}</div>${stale}`;
}

function renderLabel(label: AnswerLabel): string {
  const note = label.note ? `<span class="fallback"> · ${escapeHtml(label.note)}</span>` : '';
  return `<div class="mode mode-${label.mode}" role="note" ${attr('title', label.detail)}><span class="mode-text">${escapeHtml(label.text)}</span>${note}</div>`;
}

function seconds(entry: AnswerEntry): string {
  const total = entry.answer?.timings?.total;
  if (typeof total === 'number' && Number.isFinite(total)) {
    return `${total.toFixed(1)} s`;
  }
  if (entry.finishedAt !== undefined) {
    return `${((entry.finishedAt - entry.startedAt) / 1000).toFixed(1)} s`;
  }
  return '';
}

/** One question with its answer (or its progress, refusal or error). */
export function renderEntry(entry: AnswerEntry, options: { open?: boolean } = {}): string {
  const open = options.open ?? true;
  const answer = entry.answer;
  const refused = entry.state === 'done' && answer?.refused === true;
  const classes = ['entry', `state-${entry.state}`];
  if (refused) {
    classes.push('refused');
  }
  const grade = entry.state === 'done' ? gradeView(answer) : undefined;
  if (grade) {
    classes.push(`grade-${grade.grade.replace(/[^a-z-]/gi, '')}`);
  }
  if (entry.recorded?.stale) {
    classes.push('stale-entry');
  }
  const citations = answer?.citations ?? [];
  const body: string[] = [renderRecorded(entry)];

  if (refused) {
    const title = grade ? (/[.!?。]$/.test(grade.text) ? grade.text : `${grade.text}.`) : 'Not in your documents.';
    body.push(
      `<div class="refusal" role="note"${grade ? ` ${attr('data-grade', grade.grade)}` : ''}><span class="refusal-title">${escapeHtml(title)}</span> ` +
        'Citeline found nothing that answers this question, so it did not guess.</div>',
    );
  } else if (grade) {
    body.push(renderGrade(grade));
  }
  const label = entry.state === 'done' ? answerLabel(answer) : undefined;
  if (label) {
    body.push(renderLabel(label));
  }
  if (entry.text || entry.state !== 'streaming') {
    const extractive = entry.state === 'done' && answer?.mode === 'extractive';
    body.push(`<div class="answer">${renderAnswerText(entry.text, entry.id, citations, { extractive })}</div>`);
  }
  if (entry.state === 'streaming') {
    body.push(
      `<div class="working"><span class="spinner" aria-hidden="true"></span>${entry.text ? 'Writing…' : 'Searching the documents…'}` +
        ` <button type="button" class="stop" data-action="stop" ${attr('data-entry', entry.id)}>Stop</button></div>`,
    );
  }
  if (entry.state === 'cancelled') {
    body.push('<div class="degraded" role="note">Stopped.</div>');
  }
  if (entry.state === 'error') {
    body.push(`<div class="error" role="alert">${escapeHtml(entry.error ?? 'The question could not be answered.')}</div>`);
  }
  if (entry.state === 'done') {
    body.push(refused ? renderHits(entry.id, answer?.hits ?? []) : renderCitations(entry.id, citations));
    if (answer && !refused) {
      body.push(`<div class="actions"><button type="button" class="copy" data-action="copy" ${attr('data-entry', entry.id)} title="Copy the answer with its sources as Markdown">Copy answer</button></div>`);
    }
  }

  const meta = [seconds(entry)].filter(Boolean).join(' · ');
  return (
    `<details ${attr('class', classes.join(' '))} ${attr('id', `entry-${entry.id}`)} ${attr('data-entry', entry.id)}${grade ? ` ${attr('data-grade', grade.grade)}` : ''}${open ? ' open' : ''}>` +
    `<summary><span class="question">${escapeHtml(entry.question)}</span>` +
    (meta ? ` <span class="meta">${escapeHtml(meta)}</span>` : '') +
    `</summary><div class="body" aria-live="polite">${body.join('')}</div></details>`
  );
}

/** The whole history, newest first; only the newest is expanded. */
export function renderHistory(entries: readonly AnswerEntry[]): string {
  if (entries.length === 0) {
    return (
      '<div class="empty"><p>Ask a question about your documents: Citeline answers from them and cites the place.</p>' +
      '<button type="button" data-action="ask">Ask a Question…</button></div>'
    );
  }
  return entries.map((e, i) => renderEntry(e, { open: i === 0 })).join('');
}

export interface PageOptions {
  /** `webview.cspSource` */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
  body: string;
}

/** The panel document, with a strict Content-Security-Policy (scripts only by nonce). */
export function renderPage(o: PageOptions): string {
  const csp = [
    "default-src 'none'",
    `style-src ${o.cspSource}`,
    `img-src ${o.cspSource} data:`,
    `font-src ${o.cspSource}`,
    `script-src 'nonce-${o.nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp.replace(/"/g, '&quot;')}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(o.styleUri)}">
<title>Citeline Answers</title>
</head>
<body>
<header class="toolbar"><button type="button" data-action="ask">Ask a Question…</button></header>
<main id="history">${o.body}</main>
<script nonce="${escapeHtml(o.nonce)}" src="${escapeHtml(o.scriptUri)}"></script>
</body>
</html>`;
}

/** A random nonce for the CSP. */
export function makeNonce(): string {
  return randomBytes(16).toString('hex');
}

/** Keeps the newest `max` entries (newest first). */
export function trimHistory<T>(entries: readonly T[], max: number): T[] {
  return entries.slice(0, Math.max(1, max));
}
