// Which text items of a PDF page the viewer highlights for a citation.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { citedText, matchItems, quotedUnits, words } from '../../src/pdfMatch';

const page = [
  { str: 'Chapter 2' },
  { str: 'Citeline reads PDF files page by page and' },
  { str: 'keeps the page number with every pas-' },
  { str: 'sage, so a citation can name its page.' },
  { str: 'Scanned pages without a text layer cannot' },
  { str: 'be indexed.' },
];

test('words: lower case, punctuation dropped, CJK characters one by one', () => {
  assert.deepEqual(words('Hello, World! v2.1'), ['hello', 'world', 'v2', '1']);
  assert.deepEqual(words('支持PDF格式'), ['支', '持', 'pdf', '格', '式']);
  assert.deepEqual(words(''), []);
});

test('a passage spanning items, with a hyphenated line break, marks exactly its items', () => {
  const passage = 'Citeline reads PDF files page by page and keeps the page number with every passage, so a citation can name its page.';
  assert.deepEqual(matchItems(page, passage), [1, 2, 3]);
});

test('spacing and case differences do not matter; other text is not marked', () => {
  assert.deepEqual(matchItems(page, 'scanned   PAGES without a text layer cannot be indexed'), [4, 5]);
  assert.deepEqual(matchItems(page, 'Nothing on this page says anything like this sentence here.'), []);
  assert.deepEqual(matchItems(page, ''), []);
});

test('a short passage (fewer words than the window) still matches', () => {
  assert.deepEqual(matchItems(page, 'be indexed'), [5]);
});

test('quotedUnits: the answer units that cite [n]', () => {
  const answer = 'PDFs are read page by page. [2] The index is in .citeline. [1] Pages keep their number. [2]';
  assert.deepEqual(quotedUnits(answer, 2), ['PDFs are read page by page.', 'Pages keep their number.']);
  assert.deepEqual(quotedUnits(answer, 1), ['The index is in .citeline.']);
  assert.deepEqual(quotedUnits(answer, 3), []);
});

test('citedText: the citation text, else the hit on the same page; the units that cite it', () => {
  const answer = { answer: 'Pages keep their number. [2]', hits: [{ path: 'g.pdf', page: 4, text: 'four' }, { path: 'g.pdf', page: 3, text: 'three' }] };
  assert.deepEqual(citedText({ path: 'g.pdf', page: 3, n: 2 }, answer), { passage: 'three', quotes: ['Pages keep their number.'] });
  assert.deepEqual(citedText({ path: 'g.pdf', page: 3, n: 2, text: 'own' }, answer), { passage: 'own', quotes: ['Pages keep their number.'] });
  assert.deepEqual(citedText({ path: 'g.pdf', page: 9, text: 'hit text' }), { passage: 'hit text', quotes: [] });
  assert.deepEqual(citedText({ path: 'g.pdf', page: 9 }, answer), { quotes: [] });
});
