/**
 * Citeline's LSP extensions, as TypeScript types.
 *
 * This file mirrors the server's wire module (`server/citeline/wire.py`) and
 * docs/lsp-extensions.md; tests/test_wire.py checks its method names, its
 * `Requests` table and every interface's fields against the wire module. Pure types and constants: no `vscode` import, so unit
 * tests can load whatever depends on it.
 */

/** LSP position: 0-based line, UTF-16 character. */
export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

/** A folder is named by its `file://` URI. */
export type FolderUri = string;

// ---------------------------------------------------------------------------
// Initialization options and settings (`initializationOptions`,
// `workspace/didChangeConfiguration` settings.citeline, `workspace/configuration`
// section "citeline"). Every key optional: a missing key means "use the layer
// below" (defaults < citeline.toml < these settings).
// ---------------------------------------------------------------------------

export interface CitelineSettings {
  folders?: string[];
  embedding?: { model?: string; preset?: string };
  generation?: { model?: string; contextSize?: number };
  chunking?: { maxCost?: number; overlapCost?: number };
  search?: { topK?: number };
  /** Not in the contract's example; the daemon accepts it (its Settings tree). */
  retrieval?: { mode?: 'hybrid' | 'dense' | 'keyword' | string; denseWeight?: number; keywordWeight?: number };
  /** Optional GGUF reranker (rank pooling) reordering the best `candidates` hits. */
  reranking?: { model?: string; candidates?: number };
  answer?: {
    minScore?: number;
    /** Not in the contract's example; the daemon accepts it. */
    minKeywordScore?: number;
    maxEvidence?: number;
    maxAnswerTokens?: number;
    timeoutSeconds?: number;
    /** Not in the contract's example; the daemon accepts it. */
    temperature?: number;
    /** How answers are made: "auto" (default), "extractive" or "generative". */
    mode?: AnswerModeSetting | string;
  };
  records?: { asks?: boolean };
  /** A team index: a PostgreSQL collection this editor's daemon reads (never writes). */
  index?: { store?: string; collection?: string; exactSearch?: boolean };
}

/**
 * Whether the folder's own copy of a cited file is the one the index holds: "same"
 * (jump to the lines), "differs" or "missing" (a team index's clone that is elsewhere:
 * show the passage `text` instead, never a line that may hold something else).
 */
export type LocalCopy = 'same' | 'differs' | 'missing';

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

/** A retrieved passage. */
export interface Hit {
  rank: number;
  /** Ranking score (the daemon's hybrid search fuses ranks: not a similarity). */
  score: number;
  /** Cosine similarity of the dense search, when known (not in the contract yet). */
  dense?: number | null;
  /** Keyword (BM25-like) score, when known (not in the contract yet). */
  keyword?: number | null;
  /** The reranker's score, when a reranker reordered this hit. */
  rerank?: number | null;
  /** Relative to its folder, forward slashes. */
  path: string;
  title: string | null;
  section: string | null;
  /** 1-based PDF page, or null. */
  page: number | null;
  /** 1-based, inclusive; null for PDFs. */
  start_line: number | null;
  end_line: number | null;
  text: string;
  /** `file://` URI; a PDF's ends in `#page=N`. */
  uri: string;
  /** Whole lines: (start_line - 1, 0) to (end_line, 0); PDFs (0,0)-(0,0). */
  range: Range;
  /** The folder the hit comes from (search results). */
  folder?: FolderUri;
  /** Is the local file the indexed one? (absent from older servers: "same") */
  local_copy?: LocalCopy;
  /** The server's words for a local copy that is not the indexed one (null when "same"), shown verbatim. */
  local_copy_note?: string | null;
}

/** A numbered piece of evidence given to the model; `[n]` in the answer refers to it. */
export interface Citation {
  n: number;
  path: string;
  title: string | null;
  section: string | null;
  page: number | null;
  start_line: number | null;
  end_line: number | null;
  score: number;
  /** Whether the answer text actually cites `[n]`. */
  cited: boolean;
  uri: string;
  range: Range;
  /** The folder the citation comes from. */
  folder?: FolderUri;
  /** Is the local file the indexed one? (absent from older servers: "same") */
  local_copy?: LocalCopy;
  /** The server's words for a local copy that is not the indexed one (null when "same"), shown verbatim. */
  local_copy_note?: string | null;
  /** The cited passage from the index, when `local_copy` is not "same" (and from servers that always send it). */
  text?: string;
  /** History entries (`citeline/historyEntry`): the cited source changed or vanished since the answer. */
  changed?: boolean;
}

/** Generation stopped early (the answer is then the extractive one, `fallback` says why). */
export type Degraded = 'timeout' | 'cancelled';

/** How an answer was made: the documents' own sentences, or written by the generator and checked. */
export type AnswerMode = 'extractive' | 'generative';

/** The `answer.mode` setting: `auto` picks extractive with the bundled generator, generative with a configured one. */
export type AnswerModeSetting = 'auto' | AnswerMode;

/** Why a generative ask answered extractively. */
export type Fallback = 'unsupported' | 'timeout' | 'cancelled' | 'context';

/** How well an answer answers its question (wire agreement A). */
export type Grade = 'answer' | 'closest' | 'refused';

/** Why a refusal refused. */
export type Refusal = 'off_topic' | 'unknown_term';

export interface Answer {
  question: string;
  language: string;
  /**
   * The final text; it replaces what streamed. Extractive: the documents' units
   * verbatim, each followed by ` [n]` (list items, table rows under their header
   * and code blocks on lines of their own; a code block's `[n]` on the next line).
   */
  answer: string;
  /** null for a refusal. */
  mode: AnswerMode | null;
  /** The server's words for how the answer was made ("Quoted from your documents"); null for a refusal. */
  mode_label?: string | null;
  /** The generator's file name when it wrote the answer (mode "generative"). */
  model?: string | null;
  /** Why a generative ask answered extractively; null otherwise. */
  fallback: Fallback | null;
  /** The server's words for why (or for a stop, `degraded`), shown after the mode label; null otherwise. */
  fallback_note?: string | null;
  /** The documents do not hold the answer (exactly when `grade` is "refused"). */
  refused: boolean;
  /** The answer's grade; absent from servers older than wire agreement A. */
  grade?: Grade | string;
  /** The server's human text for the grade, shown verbatim. */
  grade_label?: string;
  /** Why a refusal refused; null otherwise. */
  refusal?: Refusal | null;
  generator_called: boolean;
  degraded: Degraded | null;
  /** The scorer's probability (0..1) that the evidence answers the question; null when not scored. */
  confidence: number | null;
  folder?: FolderUri;
  citations: Citation[];
  hits: Hit[];
  timings: {
    retrieval?: number | null;
    /** Seconds until the first answer text was sent. */
    first_text?: number | null;
    /** Older servers: seconds until the first generated token. */
    first_token?: number | null;
    total?: number | null;
  };
}

// ---------------------------------------------------------------------------
// citeline/ask
// ---------------------------------------------------------------------------

export const AskMethod = 'citeline/ask';

export interface AskParams {
  question: string;
  folder?: FolderUri;
  /** When present, the answer streams as `$/progress` with this token. */
  partialResultToken?: string | number;
}

/**
 * `$/progress` value for an ask's partialResultToken. An extractive answer
 * arrives as one delta; a generative one streams, then settles: the result's
 * `answer` (sentences the check removed are gone) replaces the streamed text.
 */
export interface AskDelta {
  delta: string;
}

/** JSON-RPC error code of a request the server does not know (an older server). */
export const MethodNotFound = -32601;

/** JSON-RPC error code of a cancelled request (`$/cancelRequest`). */
export const RequestCancelled = -32800;

// ---------------------------------------------------------------------------
// citeline/search
// ---------------------------------------------------------------------------

export const SearchMethod = 'citeline/search';

export interface SearchParams {
  query: string;
  k?: number;
  folder?: FolderUri;
}

export interface SearchResult {
  hits: Hit[];
}

// ---------------------------------------------------------------------------
// citeline/status (request, and notification server -> client)
// ---------------------------------------------------------------------------

export const StatusMethod = 'citeline/status';

export type FolderState = 'indexing' | 'ready' | 'error';

export interface FileError {
  path: string;
  message: string;
}

export interface ModelNames {
  embedding?: string | null;
  /** Why this embedding model serves the folders (the bundled choice by language). */
  embedding_reason?: string | null;
  generation?: string | null;
  reranking?: string | null;
}

/** A folder's status as `citeline status --json` prints it (and MCP's `citeline_status`). */
export interface FolderStatusFields {
  state: FolderState;
  files: number;
  chunks: number;
  /** Files waiting to be (re)indexed. */
  pending: number;
  errors: FileError[];
  /** What loading left out of a file's text. */
  notes?: FileError[];
  /** Why the folder is in state "error". */
  message?: string;
  /** The folder's path, and where its index lives. */
  docs?: string;
  index?: string;
  models?: ModelNames;
  /** Null until the folder's index is open. */
  dimension?: number | null;
  chunking?: string;
  /** When a file was last indexed (ISO 8601), null if never. */
  last_update?: string | null;
  /** A team index's collection (null: the folder's own index). */
  collection?: string | null;
  /** Grows with every committed change to the index; null until it is open. */
  generation?: number | null;
  /** A reader of a team collection (its writer indexes the canonical checkout). */
  read_only?: boolean;
  /** Indexing paused (`citeline/pauseIndexing`): nothing is committed; `pending` files wait. */
  paused?: boolean;
}

/** A folder's status as `citeline/status` lists it: `FolderStatusFields` with its URI. */
export interface FolderStatus extends FolderStatusFields {
  uri: FolderUri;
}

/** A folder the editor opened that the server does not serve (wire agreement C), and why. */
export interface UnservedFolder {
  uri: FolderUri;
  docs?: string;
  reason: string;
}

export interface StatusResult {
  folders: FolderStatus[];
  models?: ModelNames;
  /** Opened folders with neither `citeline.toml` nor `.citeline/`: `citeline/indexFolder` serves one. */
  unserved?: UnservedFolder[];
}

/** `citeline/indexFolder` `{folder}`: serves the folder (writing a minimal citeline.toml); result: its FolderStatus. */
export const IndexFolderMethod = 'citeline/indexFolder';

export interface IndexFolderParams {
  folder: FolderUri;
}

// ---------------------------------------------------------------------------
// citeline/pauseIndexing, citeline/resumeIndexing
// ---------------------------------------------------------------------------

/** Pauses a folder's indexing (no folder: every folder); searches and asks go on. */
export const PauseIndexingMethod = 'citeline/pauseIndexing';
/** Resumes it: what waited is indexed now. */
export const ResumeIndexingMethod = 'citeline/resumeIndexing';

export interface PauseIndexingParams {
  folder?: FolderUri;
}

/** The folders paused (or resumed), each as `citeline/status` lists it. */
export interface PauseIndexingResult {
  folders: FolderStatus[];
}

// ---------------------------------------------------------------------------
// citeline/reindex
// ---------------------------------------------------------------------------

export const ReindexMethod = 'citeline/reindex';

export interface ReindexParams {
  folder?: FolderUri;
}

/** A folder's ingest report: what `citeline index --json` prints, plus its URI. */
export interface ReindexFolderReport {
  uri: FolderUri;
  files: number;
  chunks: number;
  embedded: number;
  reused: number;
  removed: number;
  errors: FileError[] | number;
  files_changed?: number;
  files_removed?: number;
  cancelled?: boolean;
  seconds?: number;
  notes?: FileError[];
}

export interface ReindexResult {
  folders: ReindexFolderReport[];
}

// ---------------------------------------------------------------------------
// History (wire agreement B): the asks the server recorded, per documents folder.
// ---------------------------------------------------------------------------

export const HistoryMethod = 'citeline/history';
export const HistoryEntryMethod = 'citeline/historyEntry';
export const HistoryDeleteMethod = 'citeline/historyDelete';

export interface HistoryParams {
  folder?: FolderUri;
  /** Case-insensitive substring of the question or the answer. */
  query?: string;
  /** 1..200, default 50. */
  limit?: number;
  offset?: number;
}

/** One recorded ask, as listed. */
export interface HistoryItem {
  id: string;
  /** ISO-8601 UTC. */
  time: string;
  folder: FolderUri;
  question: string;
  grade: Grade | string;
  /** The server's words for the grade, as `citeline/ask`'s `grade_label`. */
  grade_label?: string;
  mode: AnswerMode | string | null;
  /** At most 200 characters of the answer. */
  preview: string;
  /** Number of sources cited. */
  sources: number;
}

export interface HistoryResult {
  /** Newest first. */
  entries: HistoryItem[];
  total: number;
}

export interface HistoryEntryParams {
  id: string;
}

/** A recorded answer: the `citeline/ask` result's shape, plus when, and whether its sources changed since. */
export interface HistoryEntry extends Answer {
  id: string;
  time: string;
  /** A cited source changed or vanished since the answer (each citation's `changed` says which). */
  stale: boolean;
}

export interface HistoryDeleteParams {
  id?: string;
  folder?: FolderUri;
}

export interface HistoryDeleteResult {
  deleted: number;
}

/**
 * Every request the server answers, with its params and result: the pairing the
 * server's `wire.METHODS` declares (`citeline/status` takes no params).
 */
export interface Requests {
  'citeline/ask': { params: AskParams; result: Answer };
  'citeline/search': { params: SearchParams; result: SearchResult };
  'citeline/status': { params: null; result: StatusResult };
  'citeline/indexFolder': { params: IndexFolderParams; result: FolderStatus };
  'citeline/reindex': { params: ReindexParams; result: ReindexResult };
  'citeline/pauseIndexing': { params: PauseIndexingParams; result: PauseIndexingResult };
  'citeline/resumeIndexing': { params: PauseIndexingParams; result: PauseIndexingResult };
  'citeline/history': { params: HistoryParams; result: HistoryResult };
  'citeline/historyEntry': { params: HistoryEntryParams; result: HistoryEntry };
  'citeline/historyDelete': { params: HistoryDeleteParams; result: HistoryDeleteResult };
}

/** `window/workDoneProgress/cancel` (client -> server): stops the indexing that token reports on. */
export const WorkDoneProgressCancelMethod = 'window/workDoneProgress/cancel';

// ---------------------------------------------------------------------------
// Hover: extra field the VS Code client adds to textDocument/hover params.
// ---------------------------------------------------------------------------

export interface HoverExtension {
  citeline?: { selection?: string };
}

// ---------------------------------------------------------------------------
// Server commands (workspace/executeCommand). The extension's own VS Code
// commands use other ids (citeline.askQuestion, ...) because
// vscode-languageclient registers these in VS Code for the server.
// ---------------------------------------------------------------------------

export const ServerCommands = {
  ask: 'citeline.ask',
  search: 'citeline.search',
  reindex: 'citeline.reindex',
  status: 'citeline.status',
  openCitation: 'citeline.openCitation',
} as const;

/** Diagnostics about documents that cannot be indexed carry this source. */
export const DiagnosticSource = 'citeline';
