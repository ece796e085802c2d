// The bundled PDF viewer's webview document and its Content-Security-Policy.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { pdfViewerCsp, renderPdfViewerPage } from '../../src/pdfViewerPage';

const SRC = 'https://abc.vscode-cdn.net';

test('CSP: scripts by nonce and from the extension, the worker from a blob, no network, no inline style, no eval', () => {
  const csp = pdfViewerCsp(SRC, 'n0nce');
  const directives = new Map(csp.split(/;\s*/).map((d) => [d.split(' ')[0], d.split(' ').slice(1)]));
  assert.deepEqual(directives.get('default-src'), ["'none'"]);
  assert.deepEqual(directives.get('script-src'), ["'nonce-n0nce'", SRC]);
  assert.deepEqual(directives.get('worker-src'), ['blob:', SRC]);
  assert.deepEqual(directives.get('style-src'), [SRC]);
  assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'));
  assert.ok(!directives.has('connect-src'), 'the webview fetches nothing: the PDF comes in a message');
});

test('the page: escaped URIs, the module script with its nonce, the page canvas and the highlight layer', () => {
  const html = renderPdfViewerPage({
    cspSource: SRC,
    nonce: 'n0nce',
    scriptUri: `${SRC}/dist/webview/pdfViewer.js`,
    styleUri: `${SRC}/media/pdfViewer.css`,
    pdfjsUri: `${SRC}/dist/pdfjs/pdf.min.mjs?"><script>`,
    workerUri: `${SRC}/dist/pdfjs/pdf.worker.min.mjs`,
    title: 'guide.pdf <b>',
  });
  assert.match(html, /<script nonce="n0nce" type="module" src="https:\/\/abc\.vscode-cdn\.net\/dist\/webview\/pdfViewer\.js"><\/script>/);
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.ok(html.includes('data-pdfjs="https://abc.vscode-cdn.net/dist/pdfjs/pdf.min.mjs?&quot;&gt;&lt;script&gt;"'));
  assert.ok(html.includes('<title>guide.pdf &lt;b&gt;</title>'));
  assert.match(html, /<canvas id="page-canvas"><\/canvas><div id="highlights"><\/div>/);
  assert.match(html, /data-action="external"/);
});
