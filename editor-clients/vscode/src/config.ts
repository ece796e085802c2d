/**
 * Reads the `citeline.*` settings from VS Code and hands them to the pure
 * mapping in settings.ts.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';

import * as vscode from 'vscode';

import type { CitelineSettings } from './protocol';
import { needsServer } from './serverSetup';
import {
  SECTION,
  buildServerSettings,
  formatCommand,
  resolveServerCommand,
  withDebugpy,
  type ServerCommand,
} from './settings';

export type HoverMode = 'selection' | 'always' | 'off';

function workspacePaths(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

/**
 * The value the user set (folder > workspace > user), or undefined when only the
 * default applies. `scope`: the folder (or a file in it) whose folder-level
 * settings count, in a multi-root workspace; without one, only workspace and user
 * values are seen.
 */
export function userValue(key: string, scope?: vscode.Uri): unknown {
  const inspected = vscode.workspace.getConfiguration(SECTION, scope ?? null).inspect(key);
  if (!inspected) {
    return undefined;
  }
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/**
 * What the server gets as initializationOptions / didChangeConfiguration /
 * workspace/configuration. `scope`: a folder's URI (a `workspace/configuration`
 * item's `scopeUri`): that folder's own settings (its `.vscode/settings.json` in a
 * multi-root workspace) over the workspace's and the user's. Without a scope, in a
 * single-folder workspace, that folder.
 */
export function serverSettings(scope?: vscode.Uri): { settings: CitelineSettings; problems: string[] } {
  const folders = workspacePaths();
  const wsFolders = vscode.workspace.workspaceFolders ?? [];
  const resource = scope ?? (wsFolders.length === 1 ? wsFolders[0].uri : undefined);
  const folder = (resource && vscode.workspace.getWorkspaceFolder(resource)?.uri.fsPath) ?? folders[0];
  return buildServerSettings((key) => userValue(key, resource), { baseDir: folder, workspaceFolder: folder, home: os.homedir() });
}

/** `citeline.pdf.viewer` for a PDF: `builtin` (the bundled pdf.js viewer, default) or `external`. */
export function pdfViewerSetting(resource?: vscode.Uri): 'builtin' | 'external' {
  return vscode.workspace.getConfiguration(SECTION, resource ?? null).get<string>('pdf.viewer', 'builtin') === 'external' ? 'external' : 'builtin';
}

/** How to start the server, debugpy included when CITELINE_DEBUG_PORT is set. */
export function serverCommand(): { cmd: ServerCommand; problems: string[]; line: string } {
  const config = vscode.workspace.getConfiguration(SECTION);
  const exists = (p: string): boolean => {
    try {
      return fs.existsSync(p);
    } catch {
      return false;
    }
  };
  const base = resolveServerCommand({
    command: config.get('server.command'),
    python: config.get('server.python'),
    workspaceFolders: workspacePaths(),
    exists,
    home: os.homedir(),
  });
  const problems: string[] = [];
  const debugged = withDebugpy(base, { port: process.env.CITELINE_DEBUG_PORT, mode: process.env.CITELINE_DEBUG_MODE }, exists);
  if (debugged.problem) {
    problems.push(debugged.problem);
  }
  return { cmd: debugged.cmd, problems, line: formatCommand(debugged.cmd) };
}

export function hoverMode(): HoverMode {
  const v = vscode.workspace.getConfiguration(SECTION).get<string>('hover.mode', 'selection');
  return v === 'always' || v === 'off' ? v : 'selection';
}

export function historySize(): number {
  const v = vscode.workspace.getConfiguration(SECTION).get<number>('answers.history', 10);
  return Number.isInteger(v) && v > 0 ? Math.min(v, 50) : 10;
}

/** Whether there is anything to index: a workspace folder with citeline.toml or .citeline/, or citeline.folders. */
export function hasDocumentsFolder(): boolean {
  return needsServer(workspacePaths(), userValue('folders'), (p) => fs.existsSync(p));
}

/** The server process's working directory. */
export function serverCwd(): string {
  return workspacePaths()[0] ?? os.homedir();
}
