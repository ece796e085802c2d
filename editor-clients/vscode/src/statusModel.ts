/**
 * What the status bar item and the status view say. Pure (no `vscode` import): unit-tested.
 */
import type { FolderStatus, StatusResult } from './protocol';

export type ClientState = 'starting' | 'running' | 'stopped' | 'failed';

/** Latest indexing work-done progress (`$/progress` begin/report). */
export interface IndexProgress {
  title?: string;
  percentage?: number;
  message?: string;
}

export type Overall = 'starting' | 'indexing' | 'paused' | 'ready' | 'error' | 'stopped' | 'empty';

export interface StatusSummary {
  overall: Overall;
  /** Status bar text, with a `$(codicon)`. */
  text: string;
  /** Plain-text tooltip. */
  tooltip: string;
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The last path segment of a folder URI, decoded. */
export function folderName(uri: string): string {
  const trimmed = uri.replace(/\/+$/, '');
  const last = trimmed.slice(trimmed.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(last) || uri;
  } catch {
    return last || uri;
  }
}

/** A folder's state as shown: "pausing" while a paused folder's batch finishes the file it
 * is committing, then "paused"; else its state (an error is shown as such). */
export function shownState(f: FolderStatus): string {
  if (!f.paused || f.state === 'error') {
    return f.state;
  }
  return f.state === 'indexing' ? 'pausing' : 'paused';
}

function totals(folders: readonly FolderStatus[]): { files: number; chunks: number; pending: number; errors: number } {
  return folders.reduce(
    (t, f) => ({
      files: t.files + (f.files ?? 0),
      chunks: t.chunks + (f.chunks ?? 0),
      pending: t.pending + (f.pending ?? 0),
      errors: t.errors + (f.errors?.length ?? 0),
    }),
    { files: 0, chunks: 0, pending: 0, errors: 0 },
  );
}

/** "team index docs (read-only), generation 42, updated 2026-03-02T10:41:07+0100", or "". */
export function collectionLine(f: FolderStatus): string {
  if (!f.collection) {
    return '';
  }
  const parts = [`team index ${f.collection}${f.read_only ? ' (read-only)' : ''}`];
  if (typeof f.generation === 'number') {
    parts.push(`generation ${f.generation}`);
  }
  if (f.last_update) {
    parts.push(`updated ${f.last_update}`);
  }
  return parts.join(', ');
}

function folderLine(f: FolderStatus): string {
  let line = `${folderName(f.uri)}: ${shownState(f)}, ${plural(f.files ?? 0, 'file')}, ${plural(f.chunks ?? 0, 'chunk')}`;
  const team = collectionLine(f);
  if (team) {
    line += `; ${team}`;
  }
  if (f.pending) {
    line += f.paused ? `, ${plural(f.pending, 'file')} waiting` : `, ${f.pending} pending`;
  }
  if (f.errors?.length) {
    line += `, ${plural(f.errors.length, 'document')} not indexed`;
  }
  if (f.message) {
    line += ` (${f.message})`;
  }
  return line;
}

/**
 * Whether the status bar item shows: when a folder should be served, once a server runs,
 * starts or failed, or once the user opened Citeline's sidebar in this window. A window
 * with no documents folder (nothing marked, nothing named), no server and no Citeline view
 * opened shows nothing of Citeline.
 */
export function statusItemVisible(client: ClientState, expectFolders: boolean, sidebarOpened = false): boolean {
  return expectFolders || sidebarOpened || client !== 'stopped';
}

/** Folds the folders' states (and the client's) into one status bar state. */
export function summarizeStatus(
  status: StatusResult | undefined,
  progress: IndexProgress | undefined,
  client: ClientState,
  options: { expectFolders?: boolean } = {},
): StatusSummary {
  const click = 'Click for details.';
  if (client === 'stopped' && options.expectFolders === false) {
    // No server, and nothing in this window asks for one (the sidebar was opened).
    return {
      overall: 'empty',
      text: '$(book) Citeline: no folder',
      tooltip: `No folder here has a citeline.toml or .citeline/, and citeline.folders names none: no server runs. Index a folder from the Citeline sidebar ("Index This Folder"). ${click}`,
    };
  }
  if (client === 'stopped') {
    return { overall: 'stopped', text: '$(circle-slash) Citeline: stopped', tooltip: `The Citeline server is not running. ${click}` };
  }
  if (client === 'failed') {
    return {
      overall: 'error',
      text: '$(error) Citeline: server failed',
      tooltip: `The Citeline server could not start or stopped unexpectedly. See "Citeline: Show Logs". ${click}`,
    };
  }
  if (client === 'starting' || status === undefined) {
    return { overall: 'starting', text: '$(loading~spin) Citeline: starting', tooltip: 'Starting the Citeline server…' };
  }
  const folders = status.folders ?? [];
  const unserved = status.unserved ?? [];
  if (folders.length === 0 && unserved.length > 0) {
    // Opened folders without citeline.toml or .citeline/ are not served (until the user asks).
    const why = unserved.map((u) => `${folderName(u.uri)}: ${u.reason}`).join('\n');
    return {
      overall: 'empty',
      text: `$(book) Citeline: ${unserved.length === 1 ? 'folder' : 'folders'} not indexed`,
      tooltip: `${why}\nIndex a folder from the Citeline sidebar ("Index This Folder"). ${click}`,
    };
  }
  if (folders.length === 0 && options.expectFolders) {
    // The daemon reports before it has opened the workspace's folders.
    return { overall: 'starting', text: '$(loading~spin) Citeline: starting', tooltip: 'Opening the documents folders…' };
  }
  if (folders.length === 0) {
    return { overall: 'empty', text: '$(book) Citeline: no folder', tooltip: `No documents folder: open a folder or set citeline.folders. ${click}` };
  }
  const t = totals(folders);
  const lines = folders.map(folderLine);
  const models = status.models;
  if (models?.embedding || models?.generation || models?.reranking) {
    lines.push(`models: ${[models.embedding, models.generation, models.reranking].filter(Boolean).join(', ')}`);
  }
  const tooltip = `${lines.join('\n')}\n${click}`;
  if (folders.some((f) => f.state === 'error')) {
    return { overall: 'error', text: '$(error) Citeline: error', tooltip };
  }
  const paused = folders.filter((f) => f.paused);
  if (paused.length > 0) {
    const waiting = paused.reduce((n, f) => n + (f.pending ?? 0), 0);
    const which = paused.length < folders.length ? ` (${paused.map((f) => folderName(f.uri)).join(', ')})` : '';
    const pausing = paused.some((f) => f.state === 'indexing');
    return {
      overall: 'paused',
      text: pausing ? '$(debug-pause) Citeline: pausing…' : `$(debug-pause) Citeline: paused · ${plural(waiting, 'file')} waiting`,
      tooltip: `Indexing is paused${which}: searches and answers use what is indexed. "Citeline: Resume Indexing" goes on.\n${tooltip}`,
    };
  }
  if (folders.some((f) => f.state === 'indexing')) {
    let detail = '';
    if (progress && typeof progress.percentage === 'number') {
      detail = ` ${Math.round(Math.max(0, Math.min(100, progress.percentage)))}%`;
    } else if (t.pending > 0) {
      detail = ` (${t.pending} pending)`;
    }
    const current = progress?.message ? `\nnow: ${progress.message}` : '';
    return { overall: 'indexing', text: `$(sync~spin) Citeline: indexing${detail}`, tooltip: tooltip + current };
  }
  const warn = t.errors > 0 ? ` · $(warning) ${t.errors}` : '';
  const teams = folders.filter((f) => f.collection);
  const team =
    teams.length === 1 && typeof teams[0].generation === 'number'
      ? ` · $(cloud) ${teams[0].collection} #${teams[0].generation}`
      : teams.length > 1
        ? ` · $(cloud) ${plural(teams.length, 'team index', 'team indexes')}`
        : '';
  return {
    overall: 'ready',
    text: `$(book) Citeline: ready · ${plural(t.files, 'file')} · ${plural(t.chunks, 'chunk')}${team}${warn}`,
    tooltip,
  };
}

function mdEscape(text: string): string {
  return text.replace(/([\\`*_{}[\]()#+\-.!|<>])/g, '\\$1');
}

/** Joins a folder URI and a relative path into a file URI (path segments encoded). */
export function joinUri(folderUri: string, rel: string): string {
  const base = folderUri.replace(/\/+$/, '');
  return `${base}/${rel.split('/').map(encodeURIComponent).join('/')}`;
}

/** The status view: a Markdown document. */
export function renderStatusMarkdown(
  status: StatusResult | undefined,
  client: ClientState,
  info: { command?: string; progress?: IndexProgress; updated?: Date } = {},
): string {
  const out: string[] = ['# Citeline status', ''];
  const summary = summarizeStatus(status, info.progress, client);
  out.push(`**${mdEscape(summary.text.replace(/\$\([^)]*\)\s*/g, ''))}**`, '');
  if (info.command) {
    out.push(`Server: \`${info.command.replace(/`/g, "'")}\``, '');
  }
  if (status?.models) {
    out.push(`Embedding model: ${mdEscape(status.models.embedding ?? '—')}  `);
    out.push(`Generation model: ${mdEscape(status.models.generation ?? '—')}  `);
    out.push(`Reranker: ${mdEscape(status.models.reranking ?? 'none')}`, '');
  }
  if (info.progress?.percentage !== undefined || info.progress?.message) {
    out.push(`Indexing: ${info.progress.percentage ?? '?'}% ${mdEscape(info.progress.message ?? '')}`, '');
  }
  for (const f of status?.folders ?? []) {
    out.push(`## ${mdEscape(folderName(f.uri))}`, '');
    out.push(`- folder: ${mdEscape(f.uri)}`);
    out.push(`- state: **${shownState(f)}**${f.message ? ` (${mdEscape(f.message)})` : ''}`);
    out.push(`- files: ${f.files ?? 0}, chunks: ${f.chunks ?? 0}, pending: ${f.pending ?? 0}`);
    if (f.collection) {
      out.push(`- ${mdEscape(collectionLine(f))}`);
      out.push(`- index: ${mdEscape(f.index ?? '')}`);
    } else if (f.last_update) {
      out.push(`- last update: ${mdEscape(f.last_update)}`);
    }
    if (f.errors?.length) {
      out.push('', `### Not indexed (${f.errors.length})`, '');
      for (const e of f.errors) {
        out.push(`- [${mdEscape(e.path)}](${joinUri(f.uri, e.path)}): ${mdEscape(e.message)}`);
      }
    }
    out.push('');
  }
  out.push('', 'Commands: *Citeline: Reindex*, *Citeline: Pause Indexing*, *Citeline: Resume Indexing*, *Citeline: Show Logs*, *Citeline: Restart Server*.');
  if (info.updated) {
    out.push('', `_Updated ${info.updated.toISOString()}_`);
  }
  return out.join('\n') + '\n';
}
