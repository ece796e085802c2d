/**
 * The Citeline sidebar (activity bar): Folders (served folders, their state and
 * counts, indexing runs with Pause/Resume and Cancel), Recent Answers (the
 * server's history; an entry reopens in the answer panel) and Problems (documents
 * that could not be indexed). The rows come from sidebarModel.ts (pure).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';

import type { Asker } from './ask';
import { HistoryClient, askHistoryQuery, errorText } from './history';
import type { HistoryItem } from './protocol';
import type { CitelineServer } from './server';
import { IndexFolderMethod, PauseIndexingMethod, ResumeIndexingMethod, type FolderStatus, type PauseIndexingResult } from './protocol';
import { folderRows, historyRow, indexingRows, problemRows, recordedEntry, unservedRows, workspaceRows } from './sidebarModel';
import { folderName } from './statusModel';

type FolderNode =
  | { kind: 'indexing'; token: string | number; label: string; description: string; folder?: string; paused: boolean }
  | { kind: 'folder'; uri: string; label: string; description: string; tooltip: string; state: string; paused: boolean; problems: number }
  | { kind: 'unserved'; uri: string; label: string; description: string; tooltip: string };

function stateIcon(state: string, paused: boolean): vscode.ThemeIcon {
  if (paused && state !== 'error') {
    return new vscode.ThemeIcon('debug-pause');
  }
  switch (state) {
    case 'ready':
      return new vscode.ThemeIcon('pass');
    case 'indexing':
      return new vscode.ThemeIcon('sync~spin');
    default:
      return new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'));
  }
}

class FoldersView implements vscode.TreeDataProvider<FolderNode> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly server: CitelineServer) {}

  refresh(): void {
    this.changed.fire();
  }

  getChildren(): FolderNode[] {
    const runs: FolderNode[] = indexingRows(this.server.indexing, this.server.status).map((r) => ({
      kind: 'indexing',
      token: r.token,
      label: r.label,
      description: r.description,
      folder: r.folder,
      paused: r.paused,
    }));
    const folders: FolderNode[] = folderRows(this.server.status).map((f) => ({ kind: 'folder', ...f }));
    let unserved: FolderNode[] = unservedRows(this.server.status).map((u) => ({ kind: 'unserved', ...u }));
    if (!this.server.status && this.server.state !== 'starting') {
      // No server (none starts for a window without a marked folder): the workspace's folders.
      const marked = (p: string): boolean => fs.existsSync(path.join(p, 'citeline.toml')) || fs.existsSync(path.join(p, '.citeline'));
      const ws = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
      unserved = workspaceRows(ws.map((f) => ({ uri: f.uri.toString(), path: f.uri.fsPath, marked: marked(f.uri.fsPath) })), this.server.state).map((u) => ({
        kind: 'unserved',
        ...u,
      }));
    }
    return [...runs, ...folders, ...unserved];
  }

  getTreeItem(node: FolderNode): vscode.TreeItem {
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.description = node.description;
    item.accessibilityInformation = { label: `${node.label} ${node.description}` };
    if (node.kind === 'indexing') {
      item.id = `indexing:${String(node.token)}`;
      item.iconPath = new vscode.ThemeIcon(node.paused ? 'debug-pause' : 'loading~spin');
      item.contextValue = node.paused ? 'citeline.indexing.paused' : 'citeline.indexing';
      item.tooltip = node.paused
        ? `${node.label} ${node.description}\nResume indexes what waits; Cancel drops it (the next Reindex indexes it).`
        : `${node.label} ${node.description}\nPause stops after the current file until Resume; Cancel stops it, and the rest is indexed by the next Reindex.`;
    } else if (node.kind === 'unserved') {
      item.id = `unserved:${node.uri}`;
      item.iconPath = new vscode.ThemeIcon('circle-outline');
      item.contextValue = node.description === 'not served' ? 'citeline.unserved' : 'citeline.waiting';
      item.tooltip = node.tooltip;
      item.resourceUri = vscode.Uri.parse(node.uri);
    } else {
      item.id = `folder:${node.uri}`;
      item.iconPath = stateIcon(node.state, node.paused);
      item.contextValue = node.paused ? 'citeline.folder.paused' : 'citeline.folder';
      item.tooltip = node.tooltip;
      item.resourceUri = vscode.Uri.parse(node.uri);
      item.command = { command: 'citeline.showStatus', title: 'Show Status' };
    }
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

interface ProblemNode {
  folder: string;
  path: string;
  message: string;
}

class ProblemsView implements vscode.TreeDataProvider<ProblemNode> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly server: CitelineServer) {}

  refresh(): void {
    this.changed.fire();
  }

  getChildren(): ProblemNode[] {
    return problemRows(this.server.status);
  }

  getTreeItem(p: ProblemNode): vscode.TreeItem {
    const item = new vscode.TreeItem(p.path, vscode.TreeItemCollapsibleState.None);
    item.description = p.message;
    item.tooltip = `${p.path}: ${p.message}`;
    item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'));
    item.accessibilityInformation = { label: `${p.path} ${p.message}` };
    const file = vscode.Uri.joinPath(vscode.Uri.parse(p.folder), ...p.path.split('/'));
    item.resourceUri = file;
    item.command = { command: 'revealInExplorer', title: 'Reveal', arguments: [file] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

class HistoryView implements vscode.TreeDataProvider<HistoryItem> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  view: vscode.TreeView<HistoryItem> | undefined;
  query = '';
  private items: HistoryItem[] = [];
  private total = 0;

  constructor(
    private readonly server: CitelineServer,
    private readonly history: HistoryClient,
  ) {}

  /** Reloads the list from the server. */
  async reload(): Promise<void> {
    if (!this.server.running || (this.server.status?.folders.length ?? 0) === 0) {
      this.items = [];
      this.total = 0;
      if (this.view) {
        this.view.message = 'The history shows once a folder is served.';
      }
      this.changed.fire();
      return;
    }
    try {
      const result = await this.history.list({ limit: 50, ...(this.query ? { query: this.query } : {}) });
      this.items = result?.entries ?? [];
      this.total = result?.total ?? 0;
      this.setMessage(result === undefined);
    } catch (error) {
      this.items = [];
      if (this.view) {
        this.view.message = `Could not read the history: ${errorText(error)}`;
      }
    }
    this.changed.fire();
  }

  private setMessage(unavailable: boolean): void {
    if (!this.view) {
      return;
    }
    if (unavailable) {
      this.view.message =
        this.history.supported === false ? 'This Citeline server keeps no history (it has no citeline/history request): update Citeline.' : 'The history shows once the server is running.';
    } else if (this.items.length === 0) {
      this.view.message = this.query ? `No past question or answer contains "${this.query}".` : 'No questions asked yet in these folders.';
    } else {
      this.view.message = this.query ? `${this.total} matching "${this.query}"` : this.total > this.items.length ? `The newest ${this.items.length} of ${this.total}` : undefined;
    }
    this.view.description = this.query ? `"${this.query}"` : undefined;
  }

  getChildren(): HistoryItem[] {
    return this.items;
  }

  getTreeItem(h: HistoryItem): vscode.TreeItem {
    const folders = new Set(this.items.map((i) => i.folder));
    const row = historyRow(h, Date.now(), { showFolder: folders.size > 1 || (this.server.status?.folders.length ?? 0) > 1 });
    const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
    item.id = `history:${h.id}`;
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.contextValue = 'citeline.historyEntry';
    item.accessibilityInformation = { label: `${row.label} ${row.description}` };
    item.iconPath =
      h.grade === 'refused'
        ? new vscode.ThemeIcon('circle-slash')
        : h.grade === 'closest'
          ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('editorWarning.foreground'))
          : new vscode.ThemeIcon('comment-discussion');
    item.command = { command: 'citeline.openHistoryEntry', title: 'Open Answer', arguments: [h.id] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** The folder a sidebar row stands for (undefined: every folder, as from the palette). */
function nodeFolder(node?: FolderNode): string | undefined {
  if (node?.kind === 'folder') {
    return node.uri;
  }
  return node?.kind === 'indexing' ? node.folder : undefined;
}

/** Pause or Resume Indexing: the row's folder, else every folder. */
async function pauseOrResume(server: CitelineServer, method: typeof PauseIndexingMethod | typeof ResumeIndexingMethod, node?: FolderNode): Promise<void> {
  const folder = nodeFolder(node);
  const verb = method === PauseIndexingMethod ? 'pause' : 'resume';
  if (!server.running) {
    void vscode.window.setStatusBarMessage(`Citeline: nothing to ${verb} (the server is not running)`, 4000);
    return;
  }
  try {
    const result = await server.request<PauseIndexingResult>(method, folder ? { folder } : {});
    const names = (result?.folders ?? []).map((f) => folderName(f.uri)).join(', ');
    const done = method === PauseIndexingMethod ? 'paused (searches go on; Resume Indexing continues)' : 'resumed';
    void vscode.window.setStatusBarMessage(`Citeline: indexing of ${names || 'no folder'} ${done}`, 4000);
  } catch (error) {
    void vscode.window.showErrorMessage(`Citeline: cannot ${verb} indexing: ${errorText(error)}`);
  }
  void server.refreshStatus();
}

/** Registers the sidebar's views and commands; `onShown` runs when one of its views becomes visible. */
export function registerSidebar(context: vscode.ExtensionContext, server: CitelineServer, asker: Asker, onShown: () => void = () => undefined): void {
  const history = new HistoryClient(server);
  const folders = new FoldersView(server);
  const problems = new ProblemsView(server);
  const recent = new HistoryView(server, history);
  const foldersView = vscode.window.createTreeView('citeline.folders', { treeDataProvider: folders });
  const problemsView = vscode.window.createTreeView('citeline.problems', { treeDataProvider: problems });
  recent.view = vscode.window.createTreeView('citeline.history', { treeDataProvider: recent });

  // The history is read again when the served folders change (the server starting
  // serves none until it has opened them).
  let served = '';
  const onServer = (): void => {
    folders.refresh();
    problems.refresh();
    const n = problemRows(server.status).length;
    problemsView.badge = n > 0 ? { value: n, tooltip: `${n} document(s) could not be indexed` } : undefined;
    const now = server.running ? (server.status?.folders ?? []).map((f) => f.uri).join('\n') : '';
    if (now !== served) {
      served = now;
      void recent.reload();
    }
  };

  const openEntry = async (arg: unknown): Promise<void> => {
    const id = typeof arg === 'string' ? arg : (arg as HistoryItem | undefined)?.id;
    if (!id) {
      return;
    }
    try {
      const recorded = await history.entry(id);
      asker.panel.add(recordedEntry(recorded));
    } catch (error) {
      void vscode.window.showErrorMessage(`Citeline: cannot open that answer: ${errorText(error)}`);
    }
  };

  context.subscriptions.push(
    foldersView,
    problemsView,
    recent.view,
    folders,
    problems,
    recent,
    server.onDidChange(onServer),
    // Without a server the Folders view lists the window's folders: keep it in step with them.
    vscode.workspace.onDidChangeWorkspaceFolders(() => folders.refresh()),
    ...[foldersView, problemsView, recent.view].map((v) => v.onDidChangeVisibility((e) => e.visible && onShown())),
    asker.onDidFinish(() => void recent.reload()),
    vscode.commands.registerCommand('citeline.cancelIndexing', async (node?: FolderNode) => {
      const token = node && node.kind === 'indexing' ? node.token : undefined;
      const n = await server.cancelIndexing(token);
      void vscode.window.setStatusBarMessage(n > 0 ? 'Citeline: indexing cancelled (stops after the current file)' : 'Citeline: nothing is being indexed', 4000);
    }),
    vscode.commands.registerCommand('citeline.pauseIndexing', (node?: FolderNode) => pauseOrResume(server, PauseIndexingMethod, node)),
    vscode.commands.registerCommand('citeline.resumeIndexing', (node?: FolderNode) => pauseOrResume(server, ResumeIndexingMethod, node)),
    vscode.commands.registerCommand('citeline.indexThisFolder', async (node?: FolderNode) => {
      if (!node || node.kind !== 'unserved') {
        return;
      }
      // "Citeline: Index This Folder…" (setupFeatures.ts), where the extension has it, does the same.
      if ((await vscode.commands.getCommands(true)).includes('citeline.indexFolder')) {
        await vscode.commands.executeCommand('citeline.indexFolder', vscode.Uri.parse(node.uri));
        return;
      }
      try {
        const status = await server.request<FolderStatus>(IndexFolderMethod, { folder: node.uri });
        void vscode.window.setStatusBarMessage(`Citeline: ${node.label} is served now (${status?.state ?? 'indexing'}); a citeline.toml in it keeps it so`, 5000);
      } catch (error) {
        void vscode.window.showErrorMessage(`Citeline: cannot index ${node.label}: ${errorText(error)}`);
      }
      void server.refreshStatus();
    }),
    vscode.commands.registerCommand('citeline.askInFolder', (node?: FolderNode) => asker.askInteractive(node && node.kind === 'folder' ? node.uri : undefined)),
    vscode.commands.registerCommand('citeline.openHistoryEntry', openEntry),
    vscode.commands.registerCommand('citeline.refreshHistory', () => recent.reload()),
    vscode.commands.registerCommand('citeline.searchHistory', async () => {
      const q = await askHistoryQuery(recent.query);
      if (q !== undefined) {
        recent.query = q.trim();
        await recent.reload();
      }
    }),
    vscode.commands.registerCommand('citeline.deleteHistoryEntry', async (item?: HistoryItem) => {
      if (!item?.id) {
        return;
      }
      try {
        await history.remove({ id: item.id });
      } catch (error) {
        void vscode.window.showErrorMessage(`Citeline: cannot delete that answer: ${errorText(error)}`);
      }
      await recent.reload();
    }),
    vscode.commands.registerCommand('citeline.clearHistory', async () => {
      const yes = await vscode.window.showWarningMessage('Citeline: delete every recorded question and answer of the served folders?', { modal: true }, 'Delete All');
      if (yes !== 'Delete All') {
        return;
      }
      try {
        const n = await history.remove({});
        void vscode.window.showInformationMessage(`Citeline: deleted ${n} recorded answer${n === 1 ? '' : 's'}.`);
      } catch (error) {
        void vscode.window.showErrorMessage(`Citeline: cannot clear the history: ${errorText(error)}`);
      }
      await recent.reload();
    }),
  );
  onServer();
  if ([foldersView, problemsView, recent.view].some((v) => v.visible)) {
    onShown();
  }
}
