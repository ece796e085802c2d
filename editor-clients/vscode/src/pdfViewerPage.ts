/**
 * The bundled PDF viewer's webview document, with its Content-Security-Policy.
 * Pure (no `vscode` import): unit-tested.
 *
 * Scripts: only the viewer script (by nonce) and pdf.js from the extension
 * (`cspSource`); pdf.js runs its worker from a blob wrapper that imports the
 * worker module from the extension (`worker-src blob:`). No network, no inline
 * style, no eval: the PDF's bytes come from the extension in a message.
 */
import { escapeHtml } from './answerRender';

export interface PdfPageOptions {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
  pdfjsUri: string;
  workerUri: string;
  title: string;
}

export function pdfViewerCsp(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' ${cspSource}`,
    `worker-src blob: ${cspSource}`,
    `style-src ${cspSource}`,
    `img-src ${cspSource} data: blob:`,
    `font-src ${cspSource} data: blob:`,
  ].join('; ');
}

export function renderPdfViewerPage(o: PdfPageOptions): string {
  const csp = pdfViewerCsp(o.cspSource, o.nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeHtml(o.styleUri)}">
<title>${escapeHtml(o.title)}</title>
</head>
<body>
<header class="toolbar">
<button type="button" data-action="prev" title="Previous page">‹</button>
<span id="page-label">Loading…</span>
<button type="button" data-action="next" title="Next page">›</button>
<button type="button" data-action="cited" title="Back to the cited page">Cited page</button>
<button type="button" data-action="external" class="secondary" title="Open this PDF in the system's PDF viewer">Open in System Viewer</button>
<span id="status" role="status"></span>
</header>
<main id="viewer" data-state="empty" data-pdfjs="${escapeHtml(o.pdfjsUri)}" data-worker="${escapeHtml(o.workerUri)}">
<div id="page"><canvas id="page-canvas"></canvas><div id="highlights"></div></div>
</main>
<script nonce="${escapeHtml(o.nonce)}" type="module" src="${escapeHtml(o.scriptUri)}"></script>
</body>
</html>`;
}
