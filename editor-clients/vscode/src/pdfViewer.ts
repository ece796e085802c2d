/**
 * The bundled PDF viewer: pdf.js in a webview (pdfViewerPage.ts, webview/pdfViewer.ts)
 * that opens a cited PDF at its page with the cited passage highlighted. The
 * extension reads the PDF's bytes and sends them in a message, and only for a
 * file inside a folder the server serves; the webview reads nothing itself.
 */
import * as vscode from 'vscode';

import { makeNonce } from './answerRender';
import type { CitedText } from './pdfMatch';
import { renderPdfViewerPage } from './pdfViewerPage';
import type { CitelineServer } from './server';
import { insideFolders } from './sidebarModel';

export interface PdfTarget {
  uri: string;
  page: number;
}

type FromViewer = { type: 'ready' } | { type: 'external'; page: number };

export class PdfViewer implements vscode.Disposable {
  static readonly viewType = 'citeline.pdf';
  private panel: vscode.WebviewPanel | undefined;
  private ready: Promise<void> | undefined;
  private shown: { target: PdfTarget; label: string } | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: CitelineServer,
    private readonly external: (target: PdfTarget, label: string) => Promise<void>,
  ) {}

  /** The folders the server serves, as file system paths. */
  private servedPaths(): string[] {
    return (this.server.status?.folders ?? []).map((f) => f.docs ?? vscode.Uri.parse(f.uri).fsPath);
  }

  /** Opens `target` at its page, highlighting `text`. False when the file is not one the viewer may show. */
  async open(target: PdfTarget, label: string, text: CitedText, column?: vscode.ViewColumn): Promise<boolean> {
    const file = vscode.Uri.parse(target.uri, true);
    if (file.scheme !== 'file' || !insideFolders(file.fsPath, this.servedPaths())) {
      void vscode.window.showErrorMessage(`Citeline: ${label} is not inside a folder Citeline serves; it is not opened in the PDF viewer.`);
      return false;
    }
    const data = await vscode.workspace.fs.readFile(file);
    const panel = this.ensurePanel(column);
    panel.title = `${label.split('/').pop()} · page ${target.page}`;
    panel.reveal(column ?? panel.viewColumn, false);
    await this.ready;
    this.shown = { target, label };
    await panel.webview.postMessage({
      type: 'load',
      name: label,
      data: Buffer.from(data).toString('base64'),
      page: target.page,
      ...(text.passage ? { passage: text.passage } : {}),
      quotes: text.quotes,
    });
    return true;
  }

  private ensurePanel(column?: vscode.ViewColumn): vscode.WebviewPanel {
    if (this.panel) {
      return this.panel;
    }
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const pdfjs = vscode.Uri.joinPath(dist, 'pdfjs');
    const scripts = vscode.Uri.joinPath(dist, 'webview');
    const panel = vscode.window.createWebviewPanel(
      PdfViewer.viewType,
      'Citeline PDF',
      { viewColumn: column ?? vscode.ViewColumn.Active, preserveFocus: false },
      { enableScripts: true, localResourceRoots: [pdfjs, scripts, media], retainContextWhenHidden: true, enableFindWidget: true },
    );
    panel.iconPath = vscode.Uri.joinPath(media, 'citeline.svg');
    const webview = panel.webview;
    let resolveReady: () => void = () => undefined;
    this.ready = new Promise<void>((resolve) => {
      resolveReady = resolve;
    });
    webview.onDidReceiveMessage((m: FromViewer) => {
      if (m?.type === 'ready') {
        resolveReady();
      } else if (m?.type === 'external' && this.shown) {
        void this.external({ uri: this.shown.target.uri, page: Number(m.page) || this.shown.target.page }, this.shown.label);
      }
    });
    webview.html = renderPdfViewerPage({
      cspSource: webview.cspSource,
      nonce: makeNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(scripts, 'pdfViewer.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'pdfViewer.css')).toString(),
      pdfjsUri: webview.asWebviewUri(vscode.Uri.joinPath(pdfjs, 'pdf.min.mjs')).toString(),
      workerUri: webview.asWebviewUri(vscode.Uri.joinPath(pdfjs, 'pdf.worker.min.mjs')).toString(),
      title: 'Citeline PDF',
    });
    panel.onDidDispose(() => {
      this.panel = undefined;
      this.ready = undefined;
      this.shown = undefined;
    });
    this.panel = panel;
    return panel;
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
