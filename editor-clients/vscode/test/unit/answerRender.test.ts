import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  answerLabel,
  escapeHtml,
  makeNonce,
  renderAnswerText,
  renderCitations,
  renderEntry,
  renderHistory,
  renderPage,
  settle,
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

const OUR_TAGS = new Set(['details', 'summary', 'span', 'div', 'a', 'h3', 'ol', 'li', 'button', 'p', 'pre', 'code', 'table', 'thead', 'tbody', 'tr', 'th', 'td']);

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

test('citations list: path, section, lines or page', () => {
  const html = renderCitations('1', [citation(), pdfCitation()]);
  assert.match(html, /<h3>Sources<\/h3>/);
  assert.match(html, /<li class="citation"><a href="#" class="cite" data-entry="1" data-kind="citation" data-index="0"/);
  assert.match(html, /<span class="path">getting-started\.md<\/span> <span class="section">§ Getting started &gt; Where things live<\/span> <span class="where">lines 40–47<\/span>/);
  assert.match(html, /<li class="citation"><a [^>]*data-path="citeline-guide\.pdf" data-page="3"[^>]*>.*<span class="path">citeline-guide\.pdf<\/span> <span class="where">page 3<\/span>/);
  assert.equal(renderCitations('1', []), '');
});

test('a done answer: question, label, text with links, sources, time', () => {
  const html = renderEntry(done());
  assert.match(html, /^<details class="entry state-done" id="entry-1" data-entry="1" open>/);
  assert.match(html, /<summary><span class="question">Where is the index stored\?<\/span> <span class="meta">2\.3 s<\/span><\/summary>/);
  assert.match(html, /<div class="mode mode-extractive" role="note" title="[^"]*"><span class="mode-text">Quoted from your documents<\/span><\/div><div class="answer">/);
  assert.match(html, /documents folder\. <a href="#" class="marker"[^>]*>\[1\]<\/a><\/div>/);
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

test('label: quoted, written by the model and checked, or quoted because the model fell back', () => {
  const quoted = answerLabel(answer());
  assert.equal(quoted?.mode, 'extractive');
  assert.equal(quoted?.text, 'Quoted from your documents');
  assert.equal(quoted?.note, undefined);
  assert.match(quoted?.detail ?? '', /verbatim.*53%/);

  const written = answerLabel(
    answer({ mode: 'generative', mode_label: 'Written by qwen2.5-1.5b-instruct-q4_k_m, checked against sources', generator_called: true, confidence: null }),
  );
  assert.equal(written?.mode, 'generative');
  assert.equal(written?.text, 'Written by qwen2.5-1.5b-instruct-q4_k_m, checked against sources');
  assert.match(written?.detail ?? '', /checked against the passage it cites/);

  // The server's texts, verbatim: the label, and the note after a fallback.
  const note = "the model's answer was not supported by the sources; showing the documents' own sentences";
  const unsupported = answerLabel(answer({ generator_called: true, fallback: 'unsupported', fallback_note: note }));
  assert.equal(unsupported?.text, 'Quoted from your documents');
  assert.equal(unsupported?.note, note);

  // A refusal, or a server that does not say how it answered: no label.
  assert.equal(answerLabel(answer({ refused: true, mode: null, mode_label: null, citations: [] })), undefined);
  assert.equal(answerLabel(answer({ mode: undefined as unknown as null })), undefined);
  assert.equal(answerLabel(answer({ mode_label: undefined })), undefined);
  assert.equal(answerLabel(undefined), undefined);
});

test('label in the panel: a small note over the answer, the fallback reason beside it', () => {
  const a = answer({
    generator_called: true,
    fallback: 'unsupported',
    fallback_note: "the model's answer was not supported by the sources; showing the documents' own sentences",
  });
  const html = renderEntry(done({ answer: a }));
  assert.match(html, /<div class="mode mode-extractive" role="note" title="[^"]*"><span class="mode-text">Quoted from your documents<\/span><span class="fallback"> · the model&#39;s answer was not supported by the sources; showing the documents&#39; own sentences<\/span><\/div>/);
  const g = answer({ mode: 'generative', mode_label: 'Written by Qwen2.5-1.5B, checked against sources', answer: 'The index is in .citeline [1].' });
  const written = renderEntry(done({ answer: g, text: g.answer }));
  assert.match(written, /<div class="mode mode-generative"[^>]*><span class="mode-text">Written by Qwen2\.5-1\.5B, checked against sources<\/span><\/div>/);
  // No label while streaming (the server says how it answered only at the end).
  assert.ok(!renderEntry({ id: '2', question: 'q', state: 'streaming', text: 'The index', startedAt: 0 }).includes('class="mode'));
});

test('settle: the final answer text replaces what streamed', () => {
  const entry: AnswerEntry = { id: '5', question: 'q', state: 'streaming', text: 'The index is in .citeline [1]. It is also on the moon [2].', startedAt: 0 };
  const final = answer({ mode: 'generative', mode_label: 'Written by qwen, checked against sources', answer: 'The index is in .citeline [1].' });
  settle(entry, final);
  assert.equal(entry.state, 'done');
  assert.equal(entry.text, 'The index is in .citeline [1].');
  assert.equal(entry.answer, final);
  const html = renderEntry(entry);
  assert.ok(!html.includes('moon'));
  assert.match(html, /Written by qwen, checked against sources/);
});

test('an extractive answer keeps its lines: sentences, list items, a code block, a table', () => {
  const text = [
    'The index is stored in a folder named `.citeline/` inside the documents folder. [1] Its main file is `index.sqlite3`. [1]',
    'To rebuild it: [2]',
    '- delete `.citeline/` [2]',
    '- run `citeline index` [2]',
    '```bash',
    'citeline ask "Where is a[1] stored?" --docs ~/notes',
    '```',
    '[2]',
    '| Setting | Default |',
    '| --- | --- |',
    '| `search.topK` | 5 | [1]',
    '| Setting | Default |',
    '| --- | --- |',
    '| `answer.mode` | auto | [1]',
  ].join('\n');
  const a = answer({ answer: text, citations: [citation(), citation({ n: 2, start_line: 111, end_line: 125 })] });
  const html = renderEntry(done({ answer: a, text }));
  const body = /<div class="answer">([\s\S]*?)<\/div><h3>/.exec(html)?.[1] ?? '';
  // Prose keeps its line breaks (the panel shows them: white-space: pre-wrap); inline code is code.
  assert.match(body, /^The index is stored in a folder named <code>\.citeline\/<\/code> inside the documents folder\. <a [^>]*data-index="0"[^>]*>\[1\]<\/a> Its main file/);
  assert.match(body, /\[1\]<\/a>\nTo rebuild it: <a [^>]*data-index="1"[^>]*>\[2\]<\/a>\n- delete <code>\.citeline\/<\/code> <a [^>]*>\[2\]<\/a>\n- run <code>citeline index<\/code>/);
  // The fenced block is a code block, without its fences; a [1] inside code is not a link.
  assert.match(body, /<pre class="code" data-lang="bash"><code>citeline ask &quot;Where is a\[1\] stored\?&quot; --docs ~\/notes<\/code><\/pre><a href="#" class="marker"[^>]*data-index="1"[^>]*>\[2\]<\/a>/);
  assert.ok(!body.includes('```'));
  // Two rows quoted under the same header are one table; each row ends with its marker.
  assert.equal((body.match(/<table/g) ?? []).length, 1);
  assert.match(body, /<table class="quoted"><thead><tr><th>Setting<\/th><th>Default<\/th><th class="cite-cell"><\/th><\/tr><\/thead><tbody><tr><td><code>search\.topK<\/code><\/td><td>5<\/td><td class="cite-cell"><a [^>]*>\[1\]<\/a><\/td><\/tr><tr><td><code>answer\.mode<\/code><\/td>/);
});

test('an extractive answer quoting preformatted text (no fences): a code block before its marker line', () => {
  const text = 'Start the daemon: [1]\n$ citeline serve\n$ citeline status\n[1]';
  const a = answer({ answer: text });
  const html = renderEntry(done({ answer: a, text }));
  assert.match(html, /Start the daemon: <a [^>]*>\[1\]<\/a><pre class="code"><code>\$ citeline serve\n\$ citeline status<\/code><\/pre><a [^>]*>\[1\]<\/a>/);
  // The same lines in a model's prose stay prose.
  const g = answer({ mode: 'generative', answer: text });
  assert.ok(!renderEntry(done({ answer: g, text })).includes('<pre'));
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
