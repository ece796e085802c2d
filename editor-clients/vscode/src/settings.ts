/**
 * VS Code settings -> what the server gets, and how to start the server.
 * Pure (no `vscode` import): unit-tested. `config.ts` feeds it from
 * `vscode.workspace.getConfiguration`.
 */
import * as path from 'node:path';

import type { CitelineSettings } from './protocol';

export const SECTION = 'citeline';

type Kind = 'string' | 'integer' | 'number' | 'boolean' | 'string[]';

export interface SettingSpec {
  /** Key under `citeline.` */
  key: string;
  /** Where it goes in the server's settings object (camelCase, as in the contract). */
  path: string[];
  kind: Kind;
}

/** The settings the server understands (docs/lsp-extensions.md, "Initialization options and settings"). */
export const SERVER_SETTINGS: readonly SettingSpec[] = [
  { key: 'folders', path: ['folders'], kind: 'string[]' },
  { key: 'embedding.model', path: ['embedding', 'model'], kind: 'string' },
  { key: 'embedding.preset', path: ['embedding', 'preset'], kind: 'string' },
  { key: 'generation.model', path: ['generation', 'model'], kind: 'string' },
  { key: 'generation.contextSize', path: ['generation', 'contextSize'], kind: 'integer' },
  { key: 'chunking.maxCost', path: ['chunking', 'maxCost'], kind: 'integer' },
  { key: 'chunking.overlapCost', path: ['chunking', 'overlapCost'], kind: 'integer' },
  { key: 'search.topK', path: ['search', 'topK'], kind: 'integer' },
  // The daemon's settings beyond the contract's example (same layering, same merge):
  { key: 'retrieval.mode', path: ['retrieval', 'mode'], kind: 'string' },
  { key: 'retrieval.denseWeight', path: ['retrieval', 'denseWeight'], kind: 'number' },
  { key: 'retrieval.keywordWeight', path: ['retrieval', 'keywordWeight'], kind: 'number' },
  { key: 'reranking.model', path: ['reranking', 'model'], kind: 'string' },
  { key: 'reranking.candidates', path: ['reranking', 'candidates'], kind: 'integer' },
  { key: 'answer.minScore', path: ['answer', 'minScore'], kind: 'number' },
  { key: 'answer.minKeywordScore', path: ['answer', 'minKeywordScore'], kind: 'number' },
  { key: 'answer.maxEvidence', path: ['answer', 'maxEvidence'], kind: 'integer' },
  { key: 'answer.maxAnswerTokens', path: ['answer', 'maxAnswerTokens'], kind: 'integer' },
  { key: 'answer.timeoutSeconds', path: ['answer', 'timeoutSeconds'], kind: 'number' },
  { key: 'answer.temperature', path: ['answer', 'temperature'], kind: 'number' },
  { key: 'answer.mode', path: ['answer', 'mode'], kind: 'string' },
  { key: 'records.asks', path: ['records', 'asks'], kind: 'boolean' },
  { key: 'index.store', path: ['index', 'store'], kind: 'string' },
  { key: 'index.collection', path: ['index', 'collection'], kind: 'string' },
  { key: 'index.exactSearch', path: ['index', 'exactSearch'], kind: 'boolean' },
];

/**
 * Settings whose change restarts the server: only how it is started. The server applies
 * its own settings as they change (didChangeConfiguration): those that change what an
 * index is reopen it, the others apply to the next request (docs/lsp-extensions.md,
 * the server's `needs_reopen`; tests/test_settings.py holds this list to that rule).
 */
export const RESTART_KEYS: readonly string[] = ['server.command', 'server.python'];

export interface PathContext {
  /** Resolves relative paths (the first workspace folder). */
  baseDir?: string;
  home?: string;
  workspaceFolder?: string;
}

/** `~` and `${workspaceFolder}` expanded; relative paths made absolute against baseDir. */
export function expandPath(p: string, ctx: PathContext): string {
  let out = p.trim();
  if (ctx.workspaceFolder) {
    out = out.split('${workspaceFolder}').join(ctx.workspaceFolder);
  }
  if (ctx.home && (out === '~' || out.startsWith('~/'))) {
    out = path.join(ctx.home, out.slice(1));
  }
  if (!path.isAbsolute(out) && ctx.baseDir) {
    out = path.resolve(ctx.baseDir, out);
  }
  return out;
}

function check(kind: Kind, value: unknown): boolean {
  switch (kind) {
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'string[]':
      return Array.isArray(value) && value.every((v) => typeof v === 'string');
  }
}

/**
 * Builds the server's settings from the settings the user actually set.
 *
 * `read(key)` returns the value set by the user (any scope) or `undefined` when
 * only VS Code's default applies: defaults are *not* sent, so that the
 * documents folder's `citeline.toml` is not overridden by VS Code's defaults.
 * Empty strings and empty lists also mean "not set". Wrongly typed values are
 * left out and reported in `problems`.
 */
export function buildServerSettings(
  read: (key: string) => unknown,
  ctx: PathContext = {},
): { settings: CitelineSettings; problems: string[] } {
  const settings: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const spec of SERVER_SETTINGS) {
    let value = read(spec.key);
    if (value === undefined || value === null) {
      continue;
    }
    if (!check(spec.kind, value)) {
      problems.push(`${SECTION}.${spec.key} must be ${spec.kind === 'string[]' ? 'a list of strings' : `a ${spec.kind}`}; ignored`);
      continue;
    }
    if (typeof value === 'string') {
      value = value.trim();
      if (value === '') {
        continue;
      }
      if (spec.key.endsWith('.model')) {
        value = expandPath(value as string, ctx);
      }
    }
    if (Array.isArray(value)) {
      const items = (value as string[]).map((v) => v.trim()).filter((v) => v !== '');
      if (items.length === 0) {
        continue;
      }
      value = spec.key === 'folders' ? items.map((v) => expandPath(v, ctx)) : items;
    }
    let node = settings;
    for (const part of spec.path.slice(0, -1)) {
      node = (node[part] ??= {}) as Record<string, unknown>;
    }
    node[spec.path[spec.path.length - 1]] = value;
  }
  return { settings: settings as CitelineSettings, problems };
}

/** Whether a configuration change needs a server restart. */
export function needsRestart(affects: (fullKey: string) => boolean): boolean {
  return RESTART_KEYS.some((k) => affects(`${SECTION}.${k}`));
}

// ---------------------------------------------------------------------------
// Server command
// ---------------------------------------------------------------------------

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it came from, for logs and error messages. */
  source: 'citeline.server.command' | 'citeline.server.python' | 'workspace .venv' | 'PATH' | 'installed by the extension' | "the Python extension's interpreter";
}

export interface CommandContext {
  /** `citeline.server.command` */
  command?: unknown;
  /** `citeline.server.python` */
  python?: unknown;
  /** Workspace folder paths, in order. */
  workspaceFolders: readonly string[];
  exists: (p: string) => boolean;
  platform?: NodeJS.Platform;
  home?: string;
}

export const SERVE_MODULE_ARGS = ['-m', 'citeline.cli', 'serve'];

export function venvPython(folder: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32'
    ? path.win32.join(folder, '.venv', 'Scripts', 'python.exe')
    : path.posix.join(folder, '.venv', 'bin', 'python');
}

function venvCiteline(folder: string, platform: NodeJS.Platform): string {
  return platform === 'win32'
    ? path.win32.join(folder, '.venv', 'Scripts', 'citeline.exe')
    : path.posix.join(folder, '.venv', 'bin', 'citeline');
}

/**
 * `citeline.server.command` if set; else `<python> -m citeline.cli serve` with
 * `citeline.server.python`; else the workspace's `.venv` python when Citeline is
 * installed in it; else `citeline serve` from the PATH.
 */
export function resolveServerCommand(ctx: CommandContext): ServerCommand {
  const platform = ctx.platform ?? process.platform;
  const pctx: PathContext = { home: ctx.home, workspaceFolder: ctx.workspaceFolders[0], baseDir: ctx.workspaceFolders[0] };
  if (Array.isArray(ctx.command) && ctx.command.length > 0 && ctx.command.every((c) => typeof c === 'string') && String(ctx.command[0]).trim() !== '') {
    const [first, ...rest] = ctx.command as string[];
    const exe = first.includes('/') || first.includes('\\') || first.startsWith('~') ? expandPath(first, pctx) : first;
    const args = rest.map((a) => (ctx.workspaceFolders[0] ? a.split('${workspaceFolder}').join(ctx.workspaceFolders[0]) : a));
    return { command: exe, args, source: 'citeline.server.command' };
  }
  if (typeof ctx.python === 'string' && ctx.python.trim() !== '') {
    const py = ctx.python.trim();
    const exe = py.includes('/') || py.includes('\\') || py.startsWith('~') ? expandPath(py, pctx) : py;
    return { command: exe, args: [...SERVE_MODULE_ARGS], source: 'citeline.server.python' };
  }
  // A workspace folder's .venv, or the nearest one above it (e.g. the repository's
  // .venv when the workspace is its samples/ folder).
  const p = platform === 'win32' ? path.win32 : path.posix;
  for (const folder of ctx.workspaceFolders) {
    for (let dir = folder; ; dir = p.dirname(dir)) {
      const py = venvPython(dir, platform);
      if (ctx.exists(py) && ctx.exists(venvCiteline(dir, platform))) {
        return { command: py, args: [...SERVE_MODULE_ARGS], source: 'workspace .venv' };
      }
      if (p.dirname(dir) === dir) {
        break;
      }
    }
  }
  return { command: platform === 'win32' ? 'citeline.exe' : 'citeline', args: ['serve'], source: 'PATH' };
}

export interface DebugOptions {
  /** `CITELINE_DEBUG_PORT`: "5678" or "host:5678". */
  port?: string;
  /** `CITELINE_DEBUG_MODE`: "connect" (default: debugpy connects to a listening VS Code) or "listen" (waits for an attach). */
  mode?: string;
}

/**
 * The server command wrapped in debugpy, when `CITELINE_DEBUG_PORT` is set.
 * Needs a Python interpreter: the one of the python form, or the `python` next
 * to a `citeline` script. Returns `undefined` with a reason when it cannot wrap.
 */
export function withDebugpy(
  cmd: ServerCommand,
  debug: DebugOptions,
  exists: (p: string) => boolean,
  platform: NodeJS.Platform = process.platform,
): { cmd: ServerCommand; problem?: string } {
  const raw = (debug.port ?? '').trim();
  if (!raw) {
    return { cmd };
  }
  const m = /^(?:(.+):)?(\d{1,5})$/.exec(raw);
  if (!m) {
    return { cmd, problem: `CITELINE_DEBUG_PORT=${raw} is not a port or host:port; starting without debugpy` };
  }
  const address = `${m[1] ?? '127.0.0.1'}:${m[2]}`;
  // -Xfrozen_modules=off: otherwise debugpy warns that breakpoints may be missed (Python 3.11+).
  const debugArgs =
    (debug.mode ?? '').trim().toLowerCase() === 'listen'
      ? ['-Xfrozen_modules=off', '-m', 'debugpy', '--listen', address, '--wait-for-client']
      : ['-Xfrozen_modules=off', '-m', 'debugpy', '--connect', address];

  const a = cmd.args;
  if (a[0] === '-m' && a[1] === 'citeline.cli') {
    return { cmd: { ...cmd, args: [...debugArgs, ...a] } };
  }
  const base = path.basename(cmd.command).toLowerCase();
  if (base === 'citeline' || base === 'citeline.exe') {
    const dir = path.dirname(cmd.command);
    const py = platform === 'win32' ? path.join(dir, 'python.exe') : path.join(dir, 'python');
    if (dir !== '.' && exists(py)) {
      return { cmd: { ...cmd, command: py, args: [...debugArgs, '-m', 'citeline.cli', ...a] } };
    }
  }
  return {
    cmd,
    problem:
      `cannot run "${cmd.command}" under debugpy (set citeline.server.python, or a citeline.server.command ` +
      'of the form ["<python>", "-m", "citeline.cli", "serve"]); starting without debugpy',
  };
}

/** For logs: a command line with arguments quoted when needed. */
export function formatCommand(cmd: ServerCommand): string {
  return [cmd.command, ...cmd.args].map((p) => (/^[\w@%+=:,./-]+$/.test(p) ? p : JSON.stringify(p))).join(' ');
}
