import type { Answer, Citation, Hit } from '../../src/protocol';

export function citation(over: Partial<Citation> = {}): Citation {
  return {
    n: 1,
    path: 'getting-started.md',
    title: 'Getting started',
    section: 'Getting started > Where things live',
    page: null,
    start_line: 40,
    end_line: 47,
    score: 0.71,
    cited: true,
    uri: 'file:///home/me/notes/getting-started.md',
    range: { start: { line: 39, character: 0 }, end: { line: 47, character: 0 } },
    ...over,
  };
}

export function pdfCitation(over: Partial<Citation> = {}): Citation {
  return citation({
    n: 2,
    path: 'citeline-guide.pdf',
    title: 'Citeline guide',
    section: null,
    page: 3,
    start_line: null,
    end_line: null,
    uri: 'file:///home/me/notes/citeline-guide.pdf#page=3',
    range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
    ...over,
  });
}

export function hit(over: Partial<Hit> = {}): Hit {
  const c = citation();
  return {
    rank: 1,
    score: c.score,
    path: c.path,
    title: c.title,
    section: c.section,
    page: c.page,
    start_line: c.start_line,
    end_line: c.end_line,
    text: 'The index lives in the .citeline folder\ninside the documents folder.',
    uri: c.uri,
    range: c.range,
    ...over,
  };
}

export function answer(over: Partial<Answer> = {}): Answer {
  return {
    question: 'Where is the index stored?',
    language: 'en',
    answer: 'The index lives in the .citeline folder inside the documents folder. [1]',
    mode: 'extractive',
    mode_label: 'Quoted from your documents',
    fallback: null,
    fallback_note: null,
    refused: false,
    generator_called: false,
    degraded: null,
    confidence: 0.53,
    folder: 'file:///home/me/notes',
    citations: [citation()],
    hits: [hit()],
    timings: { retrieval: 0.02, first_text: 0.41, total: 2.3 },
    ...over,
  };
}
