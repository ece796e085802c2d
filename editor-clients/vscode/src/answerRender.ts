/**
 * Turns questions and answers into the answer panel's HTML. Pure (no `vscode`
 * import): unit-tested.
 *
 * Everything that comes from the server (answer text written by a model, paths,
 * section titles, error messages) is escaped; the only markup is ours. `[n]`
 * markers become links (`data-kind="citation"`) that the panel's script turns
 * into "open this citation" messages.
 */
import { randomBytes } from 'node:crypto';

import { fullLocation, similarity, splitMarkers, whereLabel } from './citations';
import type { Answer, Citation, Hit } from './protocol';

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

/** Answer text with `[n]` markers as links to their citations. */
export function renderAnswerText(text: string, entryId: string, citations: readonly Citation[]): string {
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

/** The numbered list of citations under an answer. */
export function renderCitations(entryId: string, citations: readonly Citation[]): string {
  if (citations.length === 0) {
    return '';
  }
  // When the text cites nothing (degraded answers), every source is plain evidence: no marks.
  const anyCited = citations.some((c) => c.cited);
  const items = citations.map((c, index) => {
    const uncited = anyCited && !c.cited;
    const cls = uncited ? 'citation uncited' : 'citation cited';
    const note = uncited ? ' <span class="note">(evidence, not cited in the text)</span>' : '';
    return (
      `<li class="${cls}"><a href="#" class="cite" ${attr('data-entry', entryId)} data-kind="citation" ${attr('data-index', index)} ${placeAttrs(c)}` +
      ` ${attr('title', `Open ${fullLocation(c)}`)}><span class="n">[${c.n}]</span> ${locationParts(c)}</a>${note}</li>`
    );
  });
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

const DEGRADED_NOTES: Record<string, string> = {
  timeout: 'Writing the answer took too long: the evidence is shown instead.',
  cancelled: 'Stopped: the evidence found so far is shown.',
  uncited: 'The generated text cited no evidence: the evidence is listed instead.',
};

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
  const citations = answer?.citations ?? [];
  const body: string[] = [];

  if (refused) {
    body.push(
      '<div class="refusal" role="note"><span class="refusal-title">Not in your documents.</span> ' +
        'Citeline found nothing that answers this question, so it did not guess.</div>',
    );
  }
  if (entry.state === 'done' && answer?.degraded && DEGRADED_NOTES[answer.degraded]) {
    body.push(`<div class="degraded" role="note">${escapeHtml(DEGRADED_NOTES[answer.degraded])}</div>`);
  }
  if (entry.text || entry.state !== 'streaming') {
    body.push(`<div class="answer">${renderAnswerText(entry.text, entry.id, citations)}</div>`);
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
  }

  const meta = [seconds(entry)].filter(Boolean).join(' · ');
  return (
    `<details ${attr('class', classes.join(' '))} ${attr('id', `entry-${entry.id}`)} ${attr('data-entry', entry.id)}${open ? ' open' : ''}>` +
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
