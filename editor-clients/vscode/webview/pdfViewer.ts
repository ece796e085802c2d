// The bundled PDF viewer's webview script (bundled by esbuild into
// dist/webview/pdfViewer.js). The extension sends the PDF's bytes, the page and
// the text to highlight; pdf.js (dist/pdfjs/, loaded from the extension) renders
// the page on a canvas, and the cited text gets highlight boxes over it.
import type * as PdfJs from 'pdfjs-dist';
import type { TextItem } from 'pdfjs-dist/types/src/display/api';

import { matchItems } from '../src/pdfMatch';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface LoadMessage {
  type: 'load';
  name: string;
  /** base64 */
  data: string;
  page: number;
  /** The cited passage (the index's text of the chunk). */
  passage?: string;
  /** The answer's sentences that cite it: highlighted more strongly. */
  quotes?: string[];
}

const vscode = acquireVsCodeApi();
const root = document.getElementById('viewer') as HTMLElement;
const canvas = document.getElementById('page-canvas') as HTMLCanvasElement;
const overlay = document.getElementById('highlights') as HTMLElement;
const pageLabel = document.getElementById('page-label') as HTMLElement;
const statusLine = document.getElementById('status') as HTMLElement;

let pdfjs: typeof PdfJs | undefined;
let doc: PdfJs.PDFDocumentProxy | undefined;
let task: PdfJs.PDFDocumentLoadingTask | undefined;
let current: LoadMessage | undefined;
let shown = 1;
let rendering: Promise<void> = Promise.resolve();

async function library(): Promise<typeof PdfJs> {
  if (!pdfjs) {
    pdfjs = (await import(/* webpackIgnore: true */ root.dataset.pdfjs as string)) as typeof PdfJs;
    pdfjs.GlobalWorkerOptions.workerSrc = root.dataset.worker as string;
  }
  return pdfjs;
}

function bytes(base64: string): Uint8Array {
  const bin = atob(base64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function load(m: LoadMessage): Promise<void> {
  const lib = await library();
  if (task) {
    await task.destroy();
    task = undefined;
    doc = undefined;
  }
  current = m;
  root.dataset.state = 'loading';
  task = lib.getDocument({ data: bytes(m.data), useSystemFonts: true });
  doc = await task.promise;
  root.dataset.pages = String(doc.numPages);
  await show(Math.min(Math.max(1, m.page), doc.numPages));
}

function show(n: number): Promise<void> {
  rendering = rendering.then(() => render(n)).catch((e: unknown) => fail(e));
  return rendering;
}

async function render(n: number): Promise<void> {
  const lib = await library();
  if (!doc || !current) return;
  shown = n;
  const page = await doc.getPage(n);
  const base = page.getViewport({ scale: 1 });
  const width = Math.max(320, (root.clientWidth || 900) - 32);
  const scale = Math.min(2.5, width / base.width);
  const viewport = page.getViewport({ scale });
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.floor(viewport.width * ratio);
  canvas.height = Math.floor(viewport.height * ratio);
  canvas.style.width = `${Math.floor(viewport.width)}px`;
  canvas.style.height = `${Math.floor(viewport.height)}px`;
  overlay.style.width = canvas.style.width;
  overlay.style.height = canvas.style.height;
  const context = canvas.getContext('2d') as CanvasRenderingContext2D;
  await page.render({ canvasContext: context, canvas, viewport, transform: ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : undefined }).promise;

  overlay.replaceChildren();
  let strong = 0;
  let light = 0;
  if (n === current.page) {
    const content = await page.getTextContent();
    const items = content.items.filter((i): i is TextItem => 'str' in i);
    const quoted = new Set((current.quotes ?? []).flatMap((q) => matchItems(items, q)));
    const passage = new Set(current.passage ? matchItems(items, current.passage) : []);
    let first: HTMLElement | undefined;
    items.forEach((item, i) => {
      const kind = quoted.has(i) ? 'quote' : passage.has(i) ? 'passage' : undefined;
      if (!kind || !item.str.trim()) return;
      const tx = lib.Util.transform(viewport.transform, item.transform) as number[];
      const height = Math.hypot(tx[2], tx[3]);
      const box = document.createElement('div');
      box.className = `hl hl-${kind}`;
      box.dataset.text = item.str;
      box.style.left = `${tx[4]}px`;
      box.style.top = `${tx[5] - height}px`;
      box.style.width = `${item.width * scale}px`;
      box.style.height = `${height * 1.15}px`;
      overlay.append(box);
      first ??= box;
      if (kind === 'quote') strong++;
      else light++;
    });
    first?.scrollIntoView({ block: 'center' });
  } else {
    window.scrollTo(0, 0);
  }
  root.dataset.page = String(n);
  root.dataset.highlights = String(strong + light);
  root.dataset.state = 'rendered';
  pageLabel.textContent = `Page ${n} of ${doc.numPages}`;
  statusLine.textContent =
    n !== current.page
      ? `The cited passage is on page ${current.page}.`
      : strong + light > 0
        ? `${current.name}: the cited passage is highlighted.`
        : `${current.name}: the cited passage is on this page (its text could not be located on the page to highlight it).`;
}

function fail(e: unknown): void {
  root.dataset.state = 'error';
  statusLine.textContent = `Cannot show this PDF: ${e instanceof Error ? e.message : String(e)}`;
}

window.addEventListener('message', (event: MessageEvent) => {
  const m = event.data as LoadMessage | { type: 'page'; page: number };
  if (m?.type === 'load') {
    void load(m).catch(fail);
  } else if (m?.type === 'page' && current) {
    current = { ...current, page: m.page };
    void show(m.page);
  }
});

document.addEventListener('click', (event) => {
  const action = (event.target instanceof Element ? event.target.closest('[data-action]') : null) as HTMLElement | null;
  if (!action || !doc) return;
  const a = action.dataset.action;
  if (a === 'prev' && shown > 1) void show(shown - 1);
  else if (a === 'next' && shown < doc.numPages) void show(shown + 1);
  else if (a === 'cited' && current) void show(current.page);
  else if (a === 'external') vscode.postMessage({ type: 'external', page: shown });
});

vscode.postMessage({ type: 'ready' });
