/**
 * The status bar item (indexing with progress / ready with counts / error), the
 * status view it opens, and "Citeline: Reindex".
 */
import * as vscode from 'vscode';

import { hasDocumentsFolder } from './config';
import { ReindexMethod, type ReindexResult } from './protocol';
import type { CitelineServer } from './server';
import { folderName, plural, renderStatusMarkdown, statusItemVisible, summarizeStatus } from './statusModel';

export const STATUS_SCHEME = 'citeline-status';
const STATUS_URI = vscode.Uri.from({ scheme: STATUS_SCHEME, path: '/Citeline Status.md' });

export class StatusUi implements vscode.Disposable, vscode.TextDocumentContentProvider {
  private readonly item: vscode.StatusBarItem;
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];
  /** The user opened Citeline's sidebar in this window (the item then stays). */
  private sidebarOpened = false;

  constructor(private readonly server: CitelineServer) {
    this.item = vscode.window.createStatusBarItem('citeline.status', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'Citeline';
    this.item.command = 'citeline.showStatus';
    this.disposables.push(
      this.item,
      this.changed,
      vscode.workspace.registerTextDocumentContentProvider(STATUS_SCHEME, this),
      server.onDidChange(() => this.update()),
      // A folder added to or removed from the window can make it one with a documents folder or without.
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.update()),
    );
    this.update();
  }

  /** Called when a Citeline view becomes visible: from then on the item shows. */
  sidebarShown(): void {
    if (!this.sidebarOpened) {
      this.sidebarOpened = true;
      this.update();
    }
  }

  private update(): void {
    const expectFolders = hasDocumentsFolder();
    const s = summarizeStatus(this.server.status, this.server.progress, this.server.state, { expectFolders });
    this.item.text = s.text;
    this.item.tooltip = s.tooltip;
    this.item.backgroundColor = s.overall === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    if (statusItemVisible(this.server.state, expectFolders, this.sidebarOpened)) {
      this.item.show();
    } else {
      this.item.hide();
    }
    this.changed.fire(STATUS_URI);
  }

  provideTextDocumentContent(): string {
    return renderStatusMarkdown(this.server.status, this.server.state, {
      command: this.server.commandLine,
      progress: this.server.progress,
      updated: new Date(),
    });
  }

  /** Opens the status view (Markdown preview of a live document). */
  async show(): Promise<void> {
    await this.server.refreshStatus();
    const doc = await vscode.workspace.openTextDocument(STATUS_URI);
    try {
      await vscode.commands.executeCommand('markdown.showPreview', doc.uri);
    } catch {
      await vscode.window.showTextDocument(doc, { preview: true });
    }
  }

  /** "Citeline: Reindex": brings every folder up to date now. */
  async reindex(): Promise<void> {
    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Citeline: reindexing…', cancellable: true },
        (_progress, token) => this.server.request<ReindexResult>(ReindexMethod, {}, token),
      );
      const parts = (result?.folders ?? []).map((f) => {
        const errors = Array.isArray(f.errors) ? f.errors.length : Number(f.errors ?? 0);
        return (
          `${folderName(f.uri)}: ${plural(f.files ?? 0, 'file')}, ${plural(f.chunks ?? 0, 'chunk')} ` +
          `(${f.embedded ?? 0} embedded, ${f.reused ?? 0} reused, ${f.removed ?? 0} removed` +
          `${errors ? `, ${plural(errors, 'problem')}` : ''})`
        );
      });
      void vscode.window.showInformationMessage(`Citeline: reindexed. ${parts.join('; ') || 'No folders.'}`);
    } catch (error) {
      void vscode.window.showErrorMessage(`Citeline: reindex failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      void this.server.refreshStatus();
    }
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
