/**
 * The answer features beyond asking, registered in one place so activation
 * (extension.ts) stays short: Copy Answer (copy.ts); the sidebar, history and
 * indexing cancel (sidebar.ts, history.ts); the bundled PDF viewer (pdfViewer.ts).
 */
import * as vscode from 'vscode';

import type { Asker } from './ask';
import { copyAnswer } from './copy';
import type { CitelineServer } from './server';
import { registerSidebar } from './sidebar';

export function registerAnswerFeatures(context: vscode.ExtensionContext, server: CitelineServer, asker: Asker): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('citeline.copyAnswer', (id?: unknown) => copyAnswer(asker.panel.history, typeof id === 'string' ? id : undefined)),
  );
  registerSidebar(context, server, asker);
}
