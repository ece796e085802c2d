import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  escapeHtml,
  makeNonce,
  renderAnswerText,
  renderCitations,
  renderEntry,
  renderHistory,
  renderPage,
  trimHistory,
  type AnswerEntry,
} from '../../src/answerRender';
import { answer, citation, hit, pdfCitation } from './fixtures';

function done(over: Partial<AnswerEntry> = {}): AnswerEntry {
  const a = answer();
  return { id: '1', question: a.question, state: 'done', text: a.answer, answer: a, startedAt: 0, finishedAt: 2300, ...over };
}

/** Every tag in the output, by name: lets tests check that no foreign markup got in. */
function tags(html: string): Set<string> {
  return new Set([...html.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9-]*)/g)].map((m) => m[1].toLowerCase()));
}

const OUR_TAGS = new Set(['details', 'summary', 'span', 'div', 'a', 'h3', 'ol', 'li', 'button', 'p']);

test('escapeHtml escapes the five HTML specials and backticks', () => {
  assert.equal(escapeHtml(`<a href="x" onclick='y'>&\``), '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&#96;');
  assert.equal(escapeHtml(undefined), '');
  assert.equal(escapeHtml(3), '3');
});

test('answer text: [n] markers become links to their citation, unknown markers stay text', () => {
  const html = renderAnswerText('Stored in .citeline [1], see also [9].', '7', [citation()]);
  assert.match(html, /<a href="#" class="marker" data-entry="7" data-kind="citation" data-index="0" data-path="getting-started\.md" data-lines="40-47" title="Open getting-started\.md § Getting started &gt; Where things live, lines 40–47">\[1\]<\/a>/);
  assert.match(html, /<span class="marker">\[9\]<\/span>/);
  assert.ok(html.startsWith('Stored in .citeline '));
});

test('model output is never injected as HTML', () => {
  const evil = '<img src=x onerror="alert(1)"><script>alert(2)</script> [1] </div><iframe>';
  const entry = done({ text: evil, question: '<b>q</b>', answer: answer({ answer: evil, citations: [citation({ path: '<svg onload=x>.md', section: '"><script>' })] }) });
  const html = renderEntry(entry);
  for (const t of tags(html)) {
    assert.ok(OUR_TAGS.has(t), `unexpected tag <${t}> in ${html}`);
  }
  assert.ok(!html.includes('<script'));
  assert.ok(!html.includes('<img'));
  assert.ok(html.includes('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'));
  assert.ok(html.includes('&lt;b&gt;q&lt;/b&gt;'));
  assert.ok(html.includes('&lt;svg onload=x&gt;.md'));
});

test('citations list: path, section, lines or page; uncited ones marked', () => {
  const html = renderCitations('1', [citation(), pdfCitation({ cited: false })]);
  assert.match(html, /<h3>Sources<\/h3>/);
  assert.match(html, /<li class="citation cited"><a href="#" class="cite" data-entry="1" data-kind="citation" data-index="0"/);
  assert.match(html, /<span class="path">getting-started\.md<\/span> <span class="section">§ Getting started &gt; Where things live<\/span> <span class="where">lines 40–47<\/span>/);
  assert.match(html, /<li class="citation uncited"><a [^>]*data-path="citeline-guide\.pdf" data-page="3"[^>]*>.*<span class="path">citeline-guide\.pdf<\/span> <span class="where">page 3<\/span>.*not cited/);
  assert.equal(renderCitations('1', []), '');
  // a text that cites nothing (degraded): the sources are not marked one by one
  const none = renderCitations('1', [citation({ cited: false }), pdfCitation({ cited: false })]);
  assert.ok(!none.includes('uncited'));
  assert.ok(!none.includes('not cited'));
});

test('a done answer: question, text with links, sources, time', () => {
  const html = renderEntry(done());
  assert.match(html, /^<details class="entry state-done" id="entry-1" data-entry="1" open>/);
  assert.match(html, /<summary><span class="question">Where is the index stored\?<\/span> <span class="meta">2\.3 s<\/span><\/summary>/);
  assert.match(html, /class="marker"[^>]*>\[1\]<\/a>\./);
  assert.match(html, /Sources/);
  assert.ok(!html.includes('refusal'));
});

test('a refusal is shown as such, with the nearest passages (not sources)', () => {
  const a = answer({
    refused: true,
    generator_called: false,
    citations: [],
    answer: 'The documents do not contain the answer.\n\nNearest passages:\n- x.md (0.12)',
    hits: [hit({ score: 0.12 }), hit({ rank: 2, path: 'b.md', score: 0.1 })],
  });
  const html = renderEntry(done({ answer: a, text: a.answer }));
  assert.match(html, /class="entry state-done refused"/);
  assert.match(html, /<div class="refusal" role="note"><span class="refusal-title">Not in your documents\.<\/span>/);
  assert.match(html, /Nearest passages<\/h3><ol class="hits">/);
  assert.match(html, /data-kind="hit" data-index="1"/);
  assert.ok(!html.includes('Sources'));
});

test('degraded answers carry a note', () => {
  const html = renderEntry(done({ answer: answer({ degraded: 'timeout' }) }));
  assert.match(html, /class="degraded"[^>]*>Writing the answer took too long/);
});

test('streaming: partial text, a working line with Stop; no sources yet', () => {
  const waiting = renderEntry({ id: '2', question: 'q', state: 'streaming', text: '', startedAt: 0 });
  assert.match(waiting, /Searching the documents…/);
  assert.match(waiting, /<button type="button" class="stop" data-action="stop" data-entry="2">Stop<\/button>/);
  assert.ok(!waiting.includes('class="answer"'));
  const partial = renderEntry({ id: '2', question: 'q', state: 'streaming', text: 'The index [1', startedAt: 0 });
  assert.match(partial, /<div class="answer">The index \[1<\/div>/);
  assert.match(partial, /Writing…/);
  assert.ok(!partial.includes('Sources'));
});

test('errors and cancellations', () => {
  const err = renderEntry({ id: '3', question: 'q', state: 'error', text: '', error: 'Client is <not> running', startedAt: 0, finishedAt: 10 });
  assert.match(err, /<div class="error" role="alert">Client is &lt;not&gt; running<\/div>/);
  const stopped = renderEntry({ id: '4', question: 'q', state: 'cancelled', text: 'partial', startedAt: 0, finishedAt: 10 });
  assert.match(stopped, /Stopped\./);
  assert.match(stopped, /partial/);
});

test('history: newest first and only it expanded; empty state offers to ask', () => {
  const html = renderHistory([done({ id: 'b' }), done({ id: 'a' })]);
  assert.ok(html.indexOf('entry-b') < html.indexOf('entry-a'));
  assert.match(html, /id="entry-b" data-entry="b" open>/);
  assert.match(html, /id="entry-a" data-entry="a">/);
  assert.match(renderHistory([]), /data-action="ask"/);
  assert.deepEqual(trimHistory([1, 2, 3, 4], 2), [1, 2]);
});

test('page: strict CSP with a nonce; no inline script without it', () => {
  const nonce = makeNonce();
  assert.match(nonce, /^[0-9a-f]{32}$/);
  assert.notEqual(nonce, makeNonce());
  const html = renderPage({ cspSource: 'https://x.vscode-cdn.net', nonce, scriptUri: 'https://x/a.js', styleUri: 'https://x/a.css', body: '<p>hi</p>' });
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)?.[1] ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, new RegExp(`script-src 'nonce-${nonce}'`));
  assert.ok(!csp.includes('unsafe-inline'));
  assert.ok(!csp.includes('unsafe-eval'));
  const scripts = [...html.matchAll(/<script([^>]*)>/g)];
  assert.equal(scripts.length, 1);
  assert.ok(scripts[0][1].includes(`nonce="${nonce}"`));
  assert.ok(html.includes('<main id="history"><p>hi</p></main>'));
});
