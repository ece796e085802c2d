// The answer's grade in the panel (wire agreement A): the server's label verbatim, prominent for "closest".
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { gradeView, renderEntry, type AnswerEntry } from '../../src/answerRender';
import type { Answer } from '../../src/protocol';
import { answer, citation, hit } from './fixtures';

function done(a: Answer, over: Partial<AnswerEntry> = {}): AnswerEntry {
  return { id: '4', question: a.question, state: 'done', text: a.answer, answer: a, startedAt: 0, finishedAt: 1000, ...over };
}

const CLOSEST = 'Closest passages — they may not answer the question';

test('gradeView: the label is the server text, verbatim; only "closest" is prominent', () => {
  assert.deepEqual(gradeView(answer({ grade: 'closest', grade_label: CLOSEST })), { grade: 'closest', text: CLOSEST, prominent: true });
  assert.deepEqual(gradeView(answer({ grade: 'answer', grade_label: 'Answer' })), { grade: 'answer', text: 'Answer', prominent: false });
  // A label the client does not know is still shown as the server wrote it.
  assert.equal(gradeView(answer({ grade: 'answer', grade_label: 'Réponse' }))?.text, 'Réponse');
  // A grade without the server's label: nothing (the client has no words of its own).
  assert.equal(gradeView(answer({ grade: 'refused', refused: true })), undefined);
  // A server that does not grade: nothing.
  assert.equal(gradeView(answer()), undefined);
  assert.equal(gradeView(undefined), undefined);
  assert.equal(gradeView(answer({ grade: 'unheard-of' })), undefined);
});

test('a closest answer shows its label prominently, above the answer text and its sources', () => {
  const html = renderEntry(done(answer({ grade: 'closest', grade_label: CLOSEST })));
  const label = /<div class="grade grade-closest prominent" data-grade="closest" role="alert">.*?<span class="grade-text">([^<]*)<\/span><\/div>/.exec(html);
  assert.ok(label, html);
  assert.equal(label[1], CLOSEST);
  assert.ok(html.indexOf('class="grade ') < html.indexOf('class="answer"'), 'label is above the answer');
  assert.match(html, /<details class="entry state-done grade-closest" id="entry-4" data-entry="4" data-grade="closest" open>/);
  // Still an answer: text with markers and sources.
  assert.match(html, /class="marker"[^>]*>\[1\]<\/a>/);
  assert.match(html, /<h3>Sources<\/h3>/);
  assert.match(html, /data-action="copy" data-entry="4"/);
});

test('a plain answer shows its label quietly; the label text is escaped', () => {
  const html = renderEntry(done(answer({ grade: 'answer', grade_label: 'Answer <b>' })));
  assert.match(html, /<div class="grade grade-answer" data-grade="answer" role="note"><span class="grade-text">Answer &lt;b&gt;<\/span><\/div>/);
  assert.ok(!html.includes('prominent'));
});

test('a refusal says the server label as its title and lists the nearest passages, with no copy button', () => {
  const refused = answer({ grade: 'refused', grade_label: 'Not found in the documents', refused: true, mode: null, citations: [], answer: 'The documents do not contain the answer.', hits: [hit()] });
  const html = renderEntry(done(refused));
  assert.match(html, /<div class="refusal" role="note" data-grade="refused"><span class="refusal-title">Not found in the documents\.<\/span>/);
  assert.match(html, /Nearest passages/);
  assert.ok(!html.includes('data-action="copy"'));
});

test('an older server without grades: the refusal keeps its wording and no grade label is shown', () => {
  const html = renderEntry(done(answer({ refused: true, mode: null, citations: [] })));
  assert.match(html, /Not in your documents\./);
  assert.ok(!html.includes('class="grade'));
});

test('a streaming entry shows no grade yet', () => {
  const a = answer({ grade: 'closest', grade_label: CLOSEST });
  const html = renderEntry(done(a, { state: 'streaming' }));
  assert.ok(!html.includes('class="grade'));
});

test('an answer reopened from history says when it was asked, and that its sources changed', () => {
  const a = answer({ citations: [citation({ changed: true }), citation({ n: 2, changed: false })] });
  const html = renderEntry(done(a, { recorded: { id: 'h1', time: '2026-12-01T22:15:03Z', stale: true } }));
  assert.match(html, /<div class="recorded">From history · asked 2026-12-01 22:15 UTC<\/div>/);
  assert.match(html, /<div class="stale" role="alert">Its sources changed since this answer/);
  assert.match(html, /class="entry state-done stale-entry"/);
  assert.equal((html.match(/class="changed"/g) ?? []).length, 1, 'only the changed source is marked');
  const fresh = renderEntry(done(a, { recorded: { id: 'h1', time: '2026-12-01T22:15:03Z', stale: false } }));
  assert.ok(!fresh.includes('class="stale"'));
});
