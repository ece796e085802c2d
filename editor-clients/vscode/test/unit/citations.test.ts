import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  citationTarget,
  compactLocation,
  fullLocation,
  hitPickItem,
  isPdf,
  localCopyDiffers,
  oneLine,
  passageMarkdown,
  similarity,
  pdfPageUri,
  shortLocation,
  splitMarkers,
  stripFragment,
  whereLabel,
} from '../../src/citations';
import { citation, hit, pdfCitation } from './fixtures';

test('whereLabel: lines, a single line, a page, nothing', () => {
  assert.equal(whereLabel(citation()), 'lines 40–47');
  assert.equal(whereLabel(citation({ start_line: 12, end_line: 12 })), 'line 12');
  assert.equal(whereLabel(citation({ start_line: 12, end_line: null })), 'line 12');
  assert.equal(whereLabel(pdfCitation()), 'page 3');
  assert.equal(whereLabel(citation({ start_line: null, end_line: null })), '');
});

test('locations: short, full (with section), compact', () => {
  assert.equal(shortLocation(citation()), 'getting-started.md, lines 40–47');
  assert.equal(fullLocation(citation()), 'getting-started.md § Getting started > Where things live, lines 40–47');
  assert.equal(fullLocation(pdfCitation()), 'citeline-guide.pdf, page 3');
  assert.equal(compactLocation(citation()), 'getting-started.md:40');
  assert.equal(compactLocation(pdfCitation()), 'citeline-guide.pdf (page 3)');
  assert.equal(compactLocation(citation({ start_line: null })), 'getting-started.md');
});

test('citationTarget: a text citation selects its whole lines, 0-based', () => {
  assert.deepEqual(citationTarget(citation()), {
    kind: 'text',
    uri: 'file:///home/me/notes/getting-started.md',
    startLine: 39,
    endLine: 46,
    startCharacter: 0,
    endCharacter: 'eol',
  });
  const one = citationTarget(citation({ start_line: 1, end_line: 1 }));
  assert.equal(one.kind, 'text');
  assert.equal(one.kind === 'text' && one.startLine, 0);
  assert.equal(one.kind === 'text' && one.endLine, 0);
});

test('citationTarget: falls back to the LSP range when there are no line numbers', () => {
  const t = citationTarget(citation({ start_line: null, end_line: null, range: { start: { line: 4, character: 0 }, end: { line: 9, character: 0 } } }));
  assert.deepEqual(t, { kind: 'text', uri: 'file:///home/me/notes/getting-started.md', startLine: 4, endLine: 8, startCharacter: 0, endCharacter: 'eol' });
  const exact = citationTarget(citation({ start_line: null, end_line: null, range: { start: { line: 2, character: 3 }, end: { line: 2, character: 9 } } }));
  assert.deepEqual(exact, { kind: 'text', uri: 'file:///home/me/notes/getting-started.md', startLine: 2, endLine: 2, startCharacter: 3, endCharacter: 9 });
});

test('citationTarget: a PDF citation opens its page; the fragment is split off', () => {
  assert.deepEqual(citationTarget(pdfCitation()), { kind: 'pdf', uri: 'file:///home/me/notes/citeline-guide.pdf', page: 3 });
  // page only in the URI fragment
  assert.deepEqual(citationTarget(pdfCitation({ page: null, uri: 'file:///n/g.pdf#page=7' })), { kind: 'pdf', uri: 'file:///n/g.pdf', page: 7 });
  assert.equal(isPdf(pdfCitation()), true);
  assert.equal(isPdf(citation()), false);
  assert.equal(pdfPageUri('file:///n/g.pdf#page=2', 5), 'file:///n/g.pdf#page=5');
  assert.deepEqual(stripFragment('file:///a/b.md'), { base: 'file:///a/b.md', fragment: '' });
});

test('citationTarget keeps percent-encoded URIs as they are', () => {
  const uri = 'file:///tmp/ws/zh/%E5%B8%B8%E8%A7%81%E9%97%AE%E9%A2%98.md';
  const t = citationTarget(citation({ path: 'zh/常见问题.md', uri }));
  assert.equal(t.uri, uri);
});

test('splitMarkers: text runs and [n] markers in order', () => {
  assert.deepEqual(splitMarkers('A [1] b[2].'), [
    { kind: 'text', text: 'A ' },
    { kind: 'marker', n: 1 },
    { kind: 'text', text: ' b' },
    { kind: 'marker', n: 2 },
    { kind: 'text', text: '.' },
  ]);
  assert.deepEqual(splitMarkers('[3]'), [{ kind: 'marker', n: 3 }]);
  assert.deepEqual(splitMarkers('no markers [x] [] [1234]'), [{ kind: 'text', text: 'no markers [x] [] [1234]' }]);
  assert.deepEqual(splitMarkers(''), []);
});

test('hitPickItem: label, description with score, one-line detail', () => {
  const item = hitPickItem(hit());
  assert.equal(item.label, 'getting-started.md:40');
  assert.equal(item.description, 'Getting started > Where things live · 0.71');
  assert.equal(item.detail, 'The index lives in the .citeline folder inside the documents folder.');
  assert.equal(oneLine('a'.repeat(300), 10), `${'a'.repeat(9)}…`);
  // a fused rank score is not shown when the dense similarity is known
  assert.equal(hitPickItem(hit({ score: 0.0328, dense: 0.83 })).description, 'Getting started > Where things live · 0.83');
  assert.equal(similarity({ score: 0.5, dense: null }), 0.5);
  assert.equal(similarity({ score: Number.NaN }), undefined);
});

test('a citation into a differing local copy shows the indexed passage, never a line', () => {
  assert.equal(localCopyDiffers(citation()), false);
  assert.equal(localCopyDiffers(citation({ local_copy: 'same' })), false);
  const differs = citation({
    local_copy: 'differs',
    local_copy_note: 'your copy of this file differs from the indexed one',
    text: 'Marigolds keep aphids away.\nPlant them early.',
  });
  assert.equal(localCopyDiffers(differs), true);
  const shown = passageMarkdown(differs);
  assert.match(shown, /^# getting-started\.md § Getting started > Where things live, lines 40–47/);
  assert.match(shown, /differs from the indexed one/);
  assert.match(shown, /> Marigolds keep aphids away\.\n> Plant them early\./);
  const missing = passageMarkdown(citation({ local_copy: 'missing', local_copy_note: 'not in your copy of the documents', text: 'x' }));
  assert.equal(localCopyDiffers(citation({ local_copy: 'missing' })), true);
  assert.match(missing, /not in your copy/);
});
