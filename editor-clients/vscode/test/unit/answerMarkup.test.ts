import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseAnswer, splitInlineCode, tableCells } from '../../src/answerMarkup';

test('prose: one block, line breaks kept', () => {
  assert.deepEqual(parseAnswer('One. [1] Two. [1]\n- three [2]'), [{ kind: 'text', text: 'One. [1] Two. [1]\n- three [2]' }]);
  assert.deepEqual(parseAnswer(''), [{ kind: 'text', text: '' }]);
});

test('the sample answer: sentences, then a fenced block whose [n] is on the next line', () => {
  const text =
    'The index is stored in a folder named `.citeline/` inside the documents folder. [1] Its main file is `<docs>/.citeline/index.sqlite3`. [1]\n' +
    '```bash\nciteline ask "Where is the index stored?" --docs ~/notes\n```\n[2]';
  assert.deepEqual(parseAnswer(text, { extractive: true }), [
    { kind: 'text', text: 'The index is stored in a folder named `.citeline/` inside the documents folder. [1] Its main file is `<docs>/.citeline/index.sqlite3`. [1]' },
    { kind: 'code', code: 'citeline ask "Where is the index stored?" --docs ~/notes', lang: 'bash' },
    { kind: 'text', text: '[2]' },
  ]);
});

test('fences: ~~~ too, longer fences, blank lines inside; unclosed (streaming) runs to the end', () => {
  assert.deepEqual(parseAnswer('~~~\na\n\nb\n~~~\n[1]'), [
    { kind: 'code', code: 'a\n\nb', lang: '' },
    { kind: 'text', text: '[1]' },
  ]);
  assert.deepEqual(parseAnswer('````python\nx = 1\n````'), [{ kind: 'code', code: 'x = 1', lang: 'python' }]);
  assert.deepEqual(parseAnswer('Run: [1]\n```sh\nmake'), [
    { kind: 'text', text: 'Run: [1]' },
    { kind: 'code', code: 'make', lang: 'sh' },
  ]);
});

test('tables: header and rows, the marker after the last pipe; same-header tables merge', () => {
  const text = '| a | b |\n|---|:---:|\n| 1 | 2 | [1]\n| a | b |\n| --- | --- |\n| 3 | 4 | [2]\nx | y\n- | -';
  const blocks = parseAnswer(text, { extractive: true });
  assert.deepEqual(blocks[0], {
    kind: 'table',
    header: ['a', 'b'],
    rows: [
      { cells: ['1', '2'], after: '[1]' },
      { cells: ['3', '4'], after: '[2]' },
    ],
  });
  // "- | -" is no separator (fewer than three dashes): prose.
  assert.deepEqual(blocks[1], { kind: 'text', text: 'x | y\n- | -' });
  assert.deepEqual(tableCells('| a \\| b | c |'), ['a \\| b', 'c']);
  assert.deepEqual(tableCells('a | b'), ['a', 'b']);
});

test('extractive: unfenced lines closed by a marker-only line are one code block', () => {
  assert.deepEqual(parseAnswer('Start it: [1]\n$ citeline serve\n$ citeline status\n[1]\nDone. [2]', { extractive: true }), [
    { kind: 'text', text: 'Start it: [1]' },
    { kind: 'code', code: '$ citeline serve\n$ citeline status', lang: '' },
    { kind: 'text', text: '[1]\nDone. [2]' },
  ]);
  // Not in prose a model wrote, and not after a line that ends with its own marker.
  assert.deepEqual(parseAnswer('A.\n[1]'), [{ kind: 'text', text: 'A.\n[1]' }]);
  assert.deepEqual(parseAnswer('A. [1]\n[2]', { extractive: true }), [{ kind: 'text', text: 'A. [1]\n[2]' }]);
});

test('inline code spans, and unclosed backticks', () => {
  assert.deepEqual(splitInlineCode('run `citeline index` then ``a`b`` [1]'), [
    { kind: 'text', text: 'run ' },
    { kind: 'code', text: 'citeline index' },
    { kind: 'text', text: ' then ' },
    { kind: 'code', text: 'a`b' },
    { kind: 'text', text: ' [1]' },
  ]);
  assert.deepEqual(splitInlineCode('half `open'), [{ kind: 'text', text: 'half `open' }]);
});
