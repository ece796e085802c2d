// "Copy answer": the Markdown put on the clipboard.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { answerMarkdown, sourceLink, sourcePlace } from '../../src/answerCopy';
import { answer, citation, hit, pdfCitation } from './fixtures';

test('sources: file:line ranges and PDF pages, with links that open there', () => {
  assert.equal(sourcePlace(citation()), 'getting-started.md:40-47');
  assert.equal(sourcePlace(citation({ start_line: 12, end_line: 12 })), 'getting-started.md:12');
  assert.equal(sourcePlace(pdfCitation()), 'citeline-guide.pdf, page 3');
  assert.equal(sourceLink(citation()), 'file:///home/me/notes/getting-started.md#L40-L47');
  assert.equal(sourceLink(citation({ start_line: 12, end_line: 12 })), 'file:///home/me/notes/getting-started.md#L12');
  assert.equal(sourceLink(pdfCitation({ uri: 'file:///home/me/notes/citeline-guide.pdf#page=9' })), 'file:///home/me/notes/citeline-guide.pdf#page=3');
});

test('an answer: question, text with its [n] markers verbatim, then the numbered sources', () => {
  const a = answer({
    answer: 'The index lives in `.citeline/`. [1] The guide shows it too. [2]',
    citations: [citation(), pdfCitation()],
  });
  assert.equal(
    answerMarkdown({ question: 'Where is the index stored?', answer: a }),
    [
      '## Where is the index stored?',
      '',
      'The index lives in `.citeline/`. [1] The guide shows it too. [2]',
      '',
      'Sources:',
      '',
      '- [1] [getting-started.md:40-47](file:///home/me/notes/getting-started.md#L40-L47) — Getting started > Where things live',
      '- [2] [citeline-guide.pdf, page 3](file:///home/me/notes/citeline-guide.pdf#page=3)',
      '',
    ].join('\n'),
  );
});

test('a closest answer carries its grade label; a plain graded answer does not need one', () => {
  const label = 'Closest passages — they may not answer the question';
  const md = answerMarkdown({ question: 'q', answer: answer({ grade: 'closest', grade_label: label }) });
  assert.ok(md.includes(`\n> **${label}**\n`), md);
  assert.ok(md.indexOf(label) < md.indexOf('The index lives'));
  const plain = answerMarkdown({ question: 'q', answer: answer({ grade: 'answer', grade_label: 'Answer' }) });
  assert.ok(!plain.includes('> **'));
});

test('link labels and targets cannot break the Markdown', () => {
  const c = citation({ path: 'notes [draft] (v2).md', uri: 'file:///home/me/notes/notes%20%5Bdraft%5D%20(v2).md', section: null });
  const md = answerMarkdown({ question: 'q', answer: answer({ citations: [c] }) });
  assert.ok(md.includes('- [1] [notes \\[draft\\] (v2).md:40-47](file:///home/me/notes/notes%20%5Bdraft%5D%20%28v2%29.md#L40-L47)'), md);
});

test('a refusal: its label and the nearest passages, no answer text', () => {
  const a = answer({ refused: true, grade: 'refused', grade_label: 'Not found in the documents', mode: null, citations: [], answer: 'no', hits: [hit()] });
  const md = answerMarkdown({ question: 'Boiling point of tungsten on Mars?', answer: a });
  assert.ok(md.startsWith('## Boiling point of tungsten on Mars?\n\n**Not found in the documents.**\n'), md);
  assert.ok(md.includes('Nearest passages:\n\n- [getting-started.md:40-47](file:///home/me/notes/getting-started.md#L40-L47)'));
  assert.ok(!md.includes('\nno\n'));
});

test('an answer from history says when it was asked and whether its sources changed', () => {
  const a = answer({ citations: [citation({ changed: true })] });
  const md = answerMarkdown({ question: 'q', answer: a, recorded: { time: '2026-12-01T22:15:03Z', stale: true } });
  assert.ok(md.includes("*From Citeline's history, asked 2026-12-01T22:15:03Z; its sources changed since.*"));
  assert.ok(md.includes('(changed since)'));
});
