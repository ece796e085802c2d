/**
 * What the Citeline sidebar shows: served folders with their state and counts,
 * indexing runs, problems, recent answers, and the folder choices for an ask.
 * Pure (no `vscode` import): unit-tested.
 */
import { folderName, plural, shownState } from './statusModel';
import type { AnswerEntry } from './answerRender';
import type { Answer, FolderStatus, HistoryEntry, HistoryItem, StatusResult } from './protocol';
import type { IndexProgress } from './statusModel';

export interface FolderRow {
  uri: string;
  label: string;
  /** "ready · 8 files · 913 chunks", "indexing · 3 pending", "paused · 8 files · 913 chunks · 12 files waiting", "error". */
  description: string;
  tooltip: string;
  state: FolderStatus['state'];
  /** Indexing paused: the row offers Resume, else Pause. */
  paused: boolean;
  problems: number;
}

/** One row per served folder. */
export function folderRows(status: StatusResult | undefined): FolderRow[] {
  return (status?.folders ?? []).map((f) => {
    const counts = `${plural(f.files ?? 0, 'file')} · ${plural(f.chunks ?? 0, 'chunk')}`;
    const problems = f.errors?.length ?? 0;
    const paused = f.paused === true;
    const parts: string[] = [shownState(f)];
    if (f.state !== 'error') {
      parts.push(counts);
    }
    if ((f.pending ?? 0) > 0) {
      parts.push(paused ? `${plural(f.pending, 'file')} waiting` : `${f.pending} pending`);
    }
    if (problems > 0) {
      parts.push(plural(problems, 'problem'));
    }
    const tooltip = [
      f.docs ?? f.uri,
      `${shownState(f)}${f.message ? `: ${f.message}` : ''}`,
      counts,
      paused ? 'Indexing is paused: nothing is committed until Resume; searches and answers use what is indexed.' : '',
      f.last_update ? `last indexed ${f.last_update}` : '',
      f.index ? `index: ${f.index}` : '',
    ]
      .filter(Boolean)
      .join('\n');
    return { uri: f.uri, label: folderName(f.uri), description: parts.join(' · '), tooltip, state: f.state, paused, problems };
  });
}

export interface UnservedRow {
  uri: string;
  label: string;
  description: string;
  tooltip: string;
}

/** Opened folders the server does not serve, with why (Index This Folder serves one). */
export function unservedRows(status: StatusResult | undefined): UnservedRow[] {
  return (status?.unserved ?? []).map((u) => ({
    uri: u.uri,
    label: folderName(u.uri),
    description: 'not served',
    tooltip: `${u.docs ?? u.uri}\n${u.reason}`,
  }));
}

/**
 * The workspace's folders as the sidebar lists them while no server runs (none is
 * started for a window without a marked folder): unmarked ones are "not served"
 * (Index This Folder serves one, starting the server); marked ones wait for it.
 */
export function workspaceRows(folders: readonly { uri: string; path: string; marked: boolean }[], client: string): UnservedRow[] {
  return folders.map((f) => ({
    uri: f.uri,
    label: folderName(f.uri),
    description: f.marked ? (client === 'failed' ? 'server not running' : 'not started') : 'not served',
    tooltip: f.marked
      ? `${f.path}\nThe Citeline server is not running (see "Citeline: Show Logs").`
      : `${f.path}\nNo citeline.toml or .citeline/ folder in it: "Index This Folder" serves it.`,
  }));
}

/** The folder a progress title names ("Citeline: indexing notes" -> "notes"), if any. */
export function progressFolder(title: string | undefined): string | undefined {
  const m = /indexing\s+(.+)$/i.exec(title ?? '');
  return m ? m[1].trim() : undefined;
}

export interface IndexingRow {
  token: string | number;
  label: string;
  description: string;
  percentage?: number;
  /** The served folder the run indexes (by the name its title gives), if known. */
  folder?: string;
  /** That folder's indexing is paused (the run waits for Resume). */
  paused: boolean;
}

/** One row per indexing run in progress: "Indexing notes", "42% · ops/postgres.md";
 * a paused run says "paused" first, and its folder (from `status`) is kept for Pause/Resume. */
export function indexingRows(runs: ReadonlyMap<string | number, IndexProgress>, status?: StatusResult): IndexingRow[] {
  return [...runs.entries()].map(([token, p]) => {
    const name = progressFolder(p.title);
    const served = (status?.folders ?? []).filter((f) => folderName(f.uri) === name);
    const folder = served.length === 1 ? served[0] : undefined;
    const paused = folder?.paused === true;
    const pct = typeof p.percentage === 'number' ? `${Math.round(p.percentage)}%` : '';
    const message = paused && /^paused\b/.test(p.message ?? '') ? '' : (p.message ?? '');
    return {
      token,
      label: name ? `Indexing ${name}` : 'Indexing',
      description: [folder && paused ? shownState(folder) : '', pct, message, paused && (folder?.pending ?? 0) > 0 ? `${plural(folder?.pending ?? 0, 'file')} waiting` : '']
        .filter(Boolean)
        .join(' · '),
      percentage: p.percentage,
      folder: folder?.uri,
      paused,
    };
  });
}

export interface ProblemRow {
  folder: string;
  path: string;
  message: string;
}

/** Every document that could not be indexed, folder by folder. */
export function problemRows(status: StatusResult | undefined): ProblemRow[] {
  return (status?.folders ?? []).flatMap((f) => (f.errors ?? []).map((e) => ({ folder: f.uri, path: e.path, message: e.message })));
}

/** "just now", "5 min ago", "3 h ago", "2 days ago", else the date. */
export function timeAgo(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) {
    return iso;
  }
  const s = Math.max(0, (now - t) / 1000);
  if (s < 60) {
    return 'just now';
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ago`;
  }
  if (s < 86400) {
    return `${Math.floor(s / 3600)} h ago`;
  }
  if (s < 86400 * 7) {
    return plural(Math.floor(s / 86400), 'day') + ' ago';
  }
  return iso.slice(0, 10);
}

export interface HistoryRow {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  grade: string;
}

/** A recorded ask as a row: the question, then its grade, sources and when. */
export function historyRow(item: HistoryItem, now: number, options: { showFolder?: boolean } = {}): HistoryRow {
  const label = item.grade_label || item.grade;
  const short = item.grade === 'answer' ? '' : item.grade === 'closest' ? 'closest passages' : item.grade === 'refused' ? 'not found' : item.grade;
  const parts = [short, item.sources > 0 ? plural(item.sources, 'source') : '', timeAgo(item.time, now)];
  if (options.showFolder) {
    parts.push(folderName(item.folder));
  }
  const tooltip = [item.question, `${label} · ${plural(item.sources, 'source')} · ${item.time}`, folderName(item.folder), '', item.preview].join('\n').trim();
  return { id: item.id, label: item.question.replace(/\s+/g, ' ').trim(), description: parts.filter(Boolean).join(' · '), tooltip, grade: item.grade };
}

export interface FolderChoice {
  label: string;
  description: string;
  /** undefined: let the server pick the folder whose best hit scores highest. */
  folder: string | undefined;
}

/**
 * The folder picker of an ask: none with a single folder; with several, every
 * folder and "all folders" (the server picks), the last one used first.
 */
export function folderChoices(status: StatusResult | undefined, last?: string): FolderChoice[] {
  const folders = status?.folders ?? [];
  if (folders.length < 2) {
    return [];
  }
  const choices: FolderChoice[] = [
    { label: 'All folders', description: 'the folder with the best match answers', folder: undefined },
    ...folders.map((f) => ({ label: folderName(f.uri), description: `${f.docs ?? f.uri} · ${shownState(f)}`, folder: f.uri })),
  ];
  const i = choices.findIndex((c) => c.folder === last);
  if (i > 0) {
    choices.unshift(...choices.splice(i, 1));
  }
  return choices;
}

/** Whether `path` (absolute, `/`-separated) lies inside one of the served folders' paths. */
export function insideFolders(path: string, folders: readonly string[]): boolean {
  const norm = (p: string): string => p.replace(/\\/g, '/').replace(/\/+$/, '');
  const target = norm(path);
  if (target.split('/').includes('..')) {
    return false;
  }
  return folders.some((f) => {
    const base = norm(f);
    return base !== '' && (target === base || target.startsWith(`${base}/`));
  });
}

/** A recorded answer (`citeline/historyEntry`) as an entry of the answer panel. */
export function recordedEntry(e: HistoryEntry): AnswerEntry {
  const t = Date.parse(e.time);
  const at = Number.isFinite(t) ? t : Date.now();
  const answer: Answer = { ...e, citations: e.citations ?? [], hits: e.hits ?? [] };
  return {
    id: `h-${e.id}`,
    question: e.question,
    state: 'done',
    text: typeof e.answer === 'string' ? e.answer : '',
    answer,
    startedAt: at,
    finishedAt: at,
    recorded: { id: e.id, time: e.time, stale: e.stale === true || (e.citations ?? []).some((c) => c.changed === true) },
  };
}
