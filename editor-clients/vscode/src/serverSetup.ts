/**
 * Pure rules for where the server comes from and which folders need it (no
 * `vscode` here: unit-tested under node).
 *
 * - Folder selection (wire agreement C): a workspace folder is served when it holds
 *   `citeline.toml` or `.citeline/`; folders the user named (`citeline.folders`,
 *   "Citeline: Index This Folder…") always. No such folder: no server process.
 * - The server: the settings' command or interpreter, a workspace `.venv`, the
 *   Python extension's interpreter when it has Citeline, the one this extension
 *   installed (a venv in its global storage), `citeline` on the PATH; else the
 *   install offer, from a wheelhouse (the one in a platform `.vsix`, or one the user
 *   picks) with a Python 3.11+ whose version the wheelhouse has wheels for.
 */
import * as path from 'node:path';

import type { FolderStatus } from './protocol';
import type { ServerCommand } from './settings';

export const MARKERS = ['citeline.toml', '.citeline'] as const;

/** Whether a folder is marked for Citeline (wire agreement C). */
export function isMarked(folder: string, exists: (p: string) => boolean): boolean {
  return MARKERS.some((m) => exists(path.join(folder, m)));
}

/** Whether a window needs the server: a marked workspace folder, or a named folder. */
export function needsServer(workspaceFolders: readonly string[], named: unknown, exists: (p: string) => boolean): boolean {
  const hasNamed = Array.isArray(named) && named.some((f) => typeof f === 'string' && f.trim() !== '');
  return hasNamed || workspaceFolders.some((f) => isMarked(f, exists));
}

/** The extension's own server: a venv in its global storage. */
export function ownServerLayout(storageDir: string, platform: NodeJS.Platform = process.platform): { venv: string; python: string; citeline: string } {
  const venv = path.join(storageDir, 'server-venv');
  const bin = platform === 'win32' ? path.join(venv, 'Scripts') : path.join(venv, 'bin');
  const exe = platform === 'win32' ? '.exe' : '';
  return { venv, python: path.join(bin, `python${exe}`), citeline: path.join(bin, `citeline${exe}`) };
}

/** `citeline` on a PATH, or undefined. */
export function onPath(name: string, pathVar: string | undefined, exists: (p: string) => boolean, delimiter = path.delimiter): string | undefined {
  for (const dir of (pathVar ?? '').split(delimiter)) {
    if (dir && exists(path.join(dir, name))) {
      return path.join(dir, name);
    }
  }
  return undefined;
}

export function serveWith(citeline: string, source: ServerCommand['source']): ServerCommand {
  return { command: citeline, args: ['serve'], source };
}

export function serveWithPython(python: string, source: ServerCommand['source']): ServerCommand {
  return { command: python, args: ['-m', 'citeline.cli', 'serve'], source };
}

/**
 * The part of the API the Python extension (`ms-python.python`) exports that Citeline
 * reads (its documented surface: `ready`, `environments.getActiveEnvironmentPath`,
 * `settings.getExecutionDetails`).
 */
export interface PythonExtensionApi {
  ready?: Promise<void>;
  environments?: { getActiveEnvironmentPath?: (resource?: unknown) => { id?: string; path?: string } | undefined };
  settings?: { getExecutionDetails?: (resource?: unknown) => { execCommand?: string[] | undefined } | undefined };
}

/**
 * The interpreter the Python extension has selected, as an existing file: the active
 * environment's path (an environment folder is taken to its `bin/python`), else the
 * first word of the execution command. Undefined when neither names one.
 */
export function interpreterOf(
  api: PythonExtensionApi | undefined,
  resource: unknown,
  exists: (p: string) => boolean,
  isDir: (p: string) => boolean = () => false,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const candidates: string[] = [];
  const active = api?.environments?.getActiveEnvironmentPath?.(resource)?.path;
  if (typeof active === 'string' && active) {
    candidates.push(active);
  }
  const exec = api?.settings?.getExecutionDetails?.(resource)?.execCommand;
  if (Array.isArray(exec) && typeof exec[0] === 'string' && exec[0]) {
    candidates.push(exec[0]);
  }
  for (const c of candidates) {
    const python = isDir(c) ? (platform === 'win32' ? path.join(c, 'python.exe') : path.join(c, 'bin', 'python')) : c;
    if (path.isAbsolute(python) && exists(python)) {
      return python;
    }
  }
  return undefined;
}

export interface Wheelhouse {
  /** The citeline wheel's file name, undefined when the folder has none. */
  citeline: string | undefined;
  /** The CPython versions ("3.11") its binary wheels are for; empty: pure wheels only. */
  pythons: string[];
  /** Total size in bytes of the wheels. */
  bytes: number;
}

/** What a wheelhouse folder holds, from its file names and sizes. */
export function readWheelhouse(files: readonly { name: string; size: number }[]): Wheelhouse {
  const wheels = files.filter((f) => f.name.endsWith('.whl'));
  const citeline = wheels.find((f) => /^citeline-\d[^-]*-py3-none-any\.whl$/.test(f.name))?.name;
  const pythons = new Set<string>();
  for (const w of wheels) {
    const m = /-cp3(\d+)-cp3\1-/.exec(w.name);
    if (m) {
      pythons.add(`3.${m[1]}`);
    }
  }
  return { citeline, pythons: [...pythons].sort(), bytes: wheels.reduce((n, w) => n + w.size, 0) };
}

export interface PythonCandidate {
  path: string;
  /** [major, minor], undefined when it did not run. */
  version?: [number, number];
}

/** The interpreter to make the venv with: 3.11+, and one the wheelhouse has wheels for. */
export function choosePython(candidates: readonly PythonCandidate[], wheelhouse: Wheelhouse): PythonCandidate | undefined {
  const usable = candidates.filter((c) => c.version && (c.version[0] > 3 || (c.version[0] === 3 && c.version[1] >= 11)));
  if (wheelhouse.pythons.length === 0) {
    return usable[0];
  }
  return usable.find((c) => c.version && wheelhouse.pythons.includes(`${c.version[0]}.${c.version[1]}`));
}

/** The two steps of an install: make the venv, then pip from the wheelhouse only. */
export function installSteps(python: string, venv: string, venvPython: string, wheelhouse: string): { title: string; command: string; args: string[] }[] {
  return [
    { title: 'creating a Python environment', command: python, args: ['-m', 'venv', '--clear', venv] },
    {
      title: 'installing Citeline from the wheelhouse',
      command: venvPython,
      args: ['-m', 'pip', 'install', '--no-index', '--only-binary', ':all:', '--disable-pip-version-check', '--find-links', wheelhouse, 'citeline'],
    },
  ];
}

/** The line of a failed step's output that says why (pip's last ERROR line, else the last line). */
export function failureLine(output: string): string {
  const lines = output.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  const error = [...lines].reverse().find((l) => l.startsWith('ERROR:') || l.startsWith('Error:'));
  return error ?? lines[lines.length - 1] ?? 'no output';
}

/** "311 MB" */
export function megabytes(bytes: number): string {
  return `${Math.round(bytes / 1e6)} MB`;
}

export interface StoppedNotice {
  /** Told once per folder and message. */
  key: string;
  text: string;
  /** The action that fixes it: the settings for a model, a reindex for an index. */
  fix: 'Open Settings' | 'Reindex';
}

/** The folders the server stopped that have not been told yet (marks them told). */
export function stoppedFolderNotices(folders: readonly FolderStatus[], told: Set<string>): StoppedNotice[] {
  const notices: StoppedNotice[] = [];
  for (const folder of folders) {
    if (folder.state !== 'error' || !folder.message) {
      continue;
    }
    const key = `${folder.uri}\n${folder.message}`;
    if (told.has(key)) {
      continue;
    }
    told.add(key);
    const name = folder.docs ? path.basename(folder.docs) : folder.uri;
    notices.push({ key, text: `Citeline stopped serving ${name}: ${folder.message}`, fix: /model/i.test(folder.message) ? 'Open Settings' : 'Reindex' });
  }
  return notices;
}
