/**
 * The commands around setting Citeline up, and the one notification per stopped
 * folder:
 * - "Citeline: Index This Folder…" marks a folder for Citeline (`citeline/indexFolder`
 *   writes a minimal citeline.toml, wire agreement C) and serves it, starting the
 *   server when this window had none;
 * - "Citeline: Install the Server…" (the install offer, on demand: install.ts);
 * - "Citeline: Run Doctor" (`citeline doctor --json`, wire agreement E, into the log);
 * - a folder the server stopped (a missing model, a damaged index it could not
 *   rebuild) is told once, as a notification with the action that fixes it.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';

import { serverCommand } from './config';
import type { ServerSetup } from './install';
import type { FolderStatus } from './protocol';
import type { CitelineServer } from './server';
import { isMarked, stoppedFolderNotices } from './serverSetup';
import { formatCommand } from './settings';

const INDEX_FOLDER = 'citeline/indexFolder';

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The folder to mark: the one given (explorer), else a pick among the workspace's or any other. */
async function chooseFolder(given?: vscode.Uri): Promise<vscode.Uri | undefined> {
  if (given instanceof vscode.Uri) {
    return given;
  }
  const browse = 'Another folder…';
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
  const items = folders.map((f) => ({
    label: f.name,
    description: isMarked(f.uri.fsPath, (p) => fs.existsSync(p)) ? 'already indexed' : f.uri.fsPath,
    uri: f.uri,
  }));
  let picked: vscode.Uri | undefined;
  if (items.length === 1 && items[0].description !== 'already indexed') {
    picked = items[0].uri;
  } else if (items.length > 0) {
    const choice = await vscode.window.showQuickPick([...items, { label: browse, description: '', uri: undefined }], {
      title: 'Citeline: Index This Folder',
      placeHolder: 'The folder whose documents Citeline should index (it gets a citeline.toml)',
    });
    if (!choice) {
      return undefined;
    }
    picked = choice.uri;
  }
  if (!picked) {
    const uris = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: 'Index this folder' });
    picked = uris?.[0];
  }
  return picked;
}

async function indexFolder(server: CitelineServer, given?: vscode.Uri): Promise<void> {
  const folder = await chooseFolder(given);
  if (!folder) {
    return;
  }
  const name = path.basename(folder.fsPath);
  try {
    const status = await server.request<FolderStatus>(INDEX_FOLDER, { folder: folder.toString() });
    void vscode.window.setStatusBarMessage(`Citeline: ${name} is served (${status?.state ?? 'indexing'}); its citeline.toml keeps it so`, 6000);
  } catch (error) {
    const text = errorText(error);
    const old = /unknown method|method not found/i.test(text) ? ' (this server is older than the extension: update Citeline)' : '';
    void vscode.window.showErrorMessage(`Citeline: cannot index ${name}: ${text}${old}`);
  }
  void server.refreshStatus();
}

/** `citeline doctor --json` with the server's own command, for the served folders. */
async function runDoctor(server: CitelineServer, setup: ServerSetup): Promise<void> {
  const base = serverCommand().cmd;
  const cmd = (await setup.locate(base, false)) ?? base;
  const args = cmd.args[0] === '-m' ? ['-m', 'citeline.cli', 'doctor'] : ['doctor'];
  for (const f of server.status?.folders ?? []) {
    if (f.docs) {
      args.push('--docs', f.docs);
    }
  }
  args.push('--json');
  server.output.appendLine(`[client] ${formatCommand({ ...cmd, args })}`);
  const report = await new Promise<{ ok?: boolean; problems?: number; checks?: { level: string; area: string; summary: string; fix?: string }[] } | undefined>((resolve) => {
    execFile(cmd.command, args, { timeout: 300_000 }, (error, stdout, stderr) => {
      try {
        resolve(JSON.parse(stdout));
      } catch {
        server.output.appendLine(`[client] doctor failed: ${stderr || String(error)}`);
        resolve(undefined);
      }
    });
  });
  if (!report) {
    void vscode.window.showErrorMessage('Citeline: the doctor could not run (is the server installed?)', 'Show Logs').then((c) => c && server.output.show(true));
    return;
  }
  for (const c of report.checks ?? []) {
    server.output.appendLine(`  ${c.level.padEnd(8)} ${c.area.padEnd(10)} ${c.summary}${c.fix ? `\n${' '.repeat(22)}fix: ${c.fix}` : ''}`);
  }
  const text = report.ok ? 'Citeline doctor: all is well.' : `Citeline doctor: ${report.problems} problem(s), each with its fix in the log.`;
  const shown = report.ok ? vscode.window.showInformationMessage(text, 'Show Logs') : vscode.window.showWarningMessage(text, 'Show Logs');
  void shown.then((c) => c && server.output.show(true));
}

/** One notification per folder the server stopped, with the action that fixes it. */
export class StoppedFolders implements vscode.Disposable {
  private readonly told = new Set<string>();
  private readonly sub: vscode.Disposable;

  constructor(private readonly server: CitelineServer) {
    this.sub = server.onDidChange(() => this.check());
  }

  private check(): void {
    for (const notice of stoppedFolderNotices(this.server.status?.folders ?? [], this.told)) {
      void vscode.window.showErrorMessage(notice.text, notice.fix, 'Run Doctor').then((choice) => {
        if (choice === 'Open Settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'citeline');
        } else if (choice === 'Reindex') {
          void vscode.commands.executeCommand('citeline.reindexNow');
        } else if (choice === 'Run Doctor') {
          void vscode.commands.executeCommand('citeline.runDoctor');
        }
      });
    }
  }

  dispose(): void {
    this.sub.dispose();
  }
}

export function registerSetupFeatures(context: vscode.ExtensionContext, server: CitelineServer, setup: ServerSetup): void {
  context.subscriptions.push(
    new StoppedFolders(server),
    vscode.commands.registerCommand('citeline.indexFolder', (uri?: vscode.Uri) => indexFolder(server, uri)),
    vscode.commands.registerCommand('citeline.installServer', async () => {
      if (await setup.installInteractive()) {
        await server.restart();
      }
    }),
    vscode.commands.registerCommand('citeline.runDoctor', () => runDoctor(server, setup)),
  );
}
