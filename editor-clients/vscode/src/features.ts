/**
 * The answer features beyond asking, registered in one place so activation
 * (extension.ts) stays short: Copy Answer (copy.ts); the sidebar, history and
 * indexing pause, resume and cancel (sidebar.ts, history.ts); the bundled PDF viewer (pdfViewer.ts).
 */
import * as vscode from 'vscode';

import type { Asker } from './ask';
import { copyAnswer } from './copy';
import { openPdfExternally, setPdfOpener } from './openCitation';
import { PdfViewer } from './pdfViewer';
import type { CitelineServer } from './server';
import { registerSidebar } from './sidebar';

/** `onSidebarShown`: when one of the sidebar's views becomes visible (the status bar item then shows). */
export function registerAnswerFeatures(context: vscode.ExtensionContext, server: CitelineServer, asker: Asker, onSidebarShown?: () => void): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('citeline.copyAnswer', (id?: unknown) => copyAnswer(asker.panel.history, typeof id === 'string' ? id : undefined)),
  );
  registerSidebar(context, server, asker, onSidebarShown);
  const viewer = new PdfViewer(context.extensionUri, server, (target, label) => openPdfExternally(target, label));
  // The viewer opens beside the answer panel's column, never over it.
  setPdfOpener((target, label, text, avoid) => viewer.open(target, label, text, avoid === undefined ? undefined : avoid === vscode.ViewColumn.One ? vscode.ViewColumn.Two : vscode.ViewColumn.One));
  context.subscriptions.push(viewer, { dispose: () => setPdfOpener(undefined) });
}
