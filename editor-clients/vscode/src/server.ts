/**
 * Launches `citeline serve` over stdio with vscode-languageclient, keeps it in
 * step with the settings (restarting it when a setting needs that), and tracks
 * its status (`citeline/status`) and indexing progress.
 */
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  ProgressType,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
} from 'vscode-languageclient/node';

import { hasDocumentsFolder, serverCommand, serverCwd, serverSettings } from './config';
import { StatusMethod, WorkDoneProgressCancelMethod, type StatusResult } from './protocol';
import { SECTION, formatCommand, needsRestart, type ServerCommand } from './settings';
import type { ClientState, IndexProgress } from './statusModel';

/** How long a start with no server in the settings waits for late settings before offering to install. */
const SETTINGS_GRACE_MS = 10_000;

export class ServerNotRunning extends Error {
  constructor(detail = 'The Citeline server is not running.') {
    super(detail);
  }
}

/** The library's client, without its own "couldn't create connection" toast: ours says what to do. */
class QuietClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    const startFailed = /couldn't create connection to server/.test(message);
    super.error(message, data, startFailed ? false : showNotification);
  }
}

export class CitelineServer implements vscode.Disposable {
  readonly output: vscode.OutputChannel;
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private intentionalStop = false;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when the status, progress or client state changes. */
  readonly onDidChange = this.changed.event;
  status: StatusResult | undefined;
  progress: IndexProgress | undefined;
  state: ClientState = 'stopped';
  commandLine = '';
  private indexingTokens = new Set<string | number>();
  /** Every indexing run in progress, by its work-done token (one per folder being indexed). */
  readonly indexing = new Map<string | number, IndexProgress>();
  private restartTimer: NodeJS.Timeout | undefined;

  /** Finds the server when the settings name none (install.ts), set before the first start. */
  /** Finds the server for a command the settings do not name; with `offer`, may offer to install it. */
  locate: ((cmd: ServerCommand, offer: boolean) => Promise<ServerCommand | undefined>) | undefined;

  /** Middleware added to the client's (hover), set before the first start. */
  extraMiddleware: Middleware = {};

  constructor() {
    this.output = vscode.window.createOutputChannel('Citeline');
    this.disposables.push(
      this.output,
      this.changed,
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
      vscode.workspace.onDidChangeWorkspaceFolders((e) => this.onWorkspaceFoldersChanged(e)),
    );
  }

  /** The running client, or undefined. */
  get running(): LanguageClient | undefined {
    return this.client && this.client.state === State.Running ? this.client : undefined;
  }

  /** Starts the server if there is a documents folder (at activation). */
  async startIfUseful(): Promise<void> {
    if (hasDocumentsFolder()) {
      await this.start();
    } else {
      this.output.appendLine('No folder with citeline.toml or .citeline/ and no citeline.folders: the server starts on first use ("Citeline: Index This Folder…" marks one).');
    }
  }

  /** The running client, starting the server if needed. Throws ServerNotRunning. */
  async ensureClient(): Promise<LanguageClient> {
    if (this.running) {
      return this.running;
    }
    // The library restarts a crashed server by itself: wait for that rather than start another.
    if (this.client && this.client.state === State.Starting) {
      await this.whenSettled(this.client, 120_000);
      if (this.running) {
        return this.running;
      }
    }
    const client = await this.start();
    if (!client || client.state !== State.Running) {
      throw new ServerNotRunning('The Citeline server could not start. See "Citeline: Show Logs".');
    }
    return client;
  }

  private whenSettled(client: LanguageClient, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const sub = client.onDidChangeState((e) => {
        if (e.newState !== State.Starting) {
          done();
        }
      });
      function done(): void {
        clearTimeout(timer);
        sub.dispose();
        resolve();
      }
    });
  }

  start(): Promise<LanguageClient | undefined> {
    if (this.running) {
      return Promise.resolve(this.running);
    }
    if (!this.starting) {
      this.starting = this.doStart().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  /** The server the settings name, once they do (polled: no event says the settings arrived). */
  private async configuredServer(waitMs: number): Promise<ReturnType<typeof serverCommand> | undefined> {
    const end = Date.now() + waitMs;
    for (;;) {
      const now = serverCommand();
      if (now.cmd.source !== 'PATH') {
        return now;
      }
      if (Date.now() >= end) {
        return undefined;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  private setState(state: ClientState): void {
    this.state = state;
    this.changed.fire();
  }

  private async doStart(): Promise<LanguageClient | undefined> {
    const previous = this.client;
    if (previous) {
      // A client that gave up (crashed too often, or failed to start).
      this.client = undefined;
      await previous.dispose(2000).catch(() => undefined);
    }
    let resolved = serverCommand();
    let { cmd, line } = resolved;
    if (this.locate) {
      // No server named in the settings: find one, or offer to install it (one notification).
      this.setState('starting');
      let found = await this.locate(cmd, false);
      if (!found) {
        // A window that has just (re)loaded can activate the extension before the user's
        // settings reach it (seen in code-server): a configured server wins over the offer.
        const later = await this.configuredServer(SETTINGS_GRACE_MS);
        if (later) {
          this.output.appendLine(`[client] the settings name a server: ${later.line}`);
          resolved = later;
          ({ cmd, line } = later);
        }
        found = await this.locate(cmd, true);
      }
      if (!found) {
        this.output.appendLine('[client] no Citeline server found: not started');
        this.setState('failed');
        return undefined;
      }
      if (found !== cmd) {
        cmd = found;
        line = formatCommand(found);
      }
    }
    const { problems } = resolved;
    const { settings, problems: settingProblems } = serverSettings();
    for (const p of [...problems, ...settingProblems]) {
      this.output.appendLine(`[client] warning: ${p}`);
      void vscode.window.showWarningMessage(`Citeline: ${p}`);
    }
    this.commandLine = line;
    this.output.appendLine(`[client] starting: ${line} (from ${cmd.source})`);
    // No `transport`: stdio, without the `--stdio` argument the library would append.
    const exec = {
      command: cmd.command,
      args: cmd.args,
      options: { cwd: serverCwd(), env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' } },
    } as const;
    const serverOptions: ServerOptions = { run: exec, debug: exec };

    const middleware: Middleware = {
      ...this.extraMiddleware,
      // Indexing progress also drives the status bar item.
      handleWorkDoneProgress: (token, params, next) => {
        this.onWorkDoneProgress(token, params);
        next(token, params);
      },
      workspace: {
        ...this.extraMiddleware.workspace,
        // Answer with the settings the user set (not VS Code's defaults, which would hide citeline.toml).
        configuration: async (params, token, next) => {
          const others = await next(params, token);
          if (!Array.isArray(others)) {
            return others;
          }
          return params.items.map((item, i) =>
            item.section === SECTION ? serverSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined).settings : others[i],
          );
        },
        // When the server registers for didChangeConfiguration, the client library
        // would send VS Code's whole configuration (defaults included) or `null`:
        // send the settings the user set instead.
        didChangeConfiguration: async () => this.sendSettings(),
      },
    };

    const clientOptions: LanguageClientOptions = {
      // Hover works on any document; didOpen/didSave reach the server for every file.
      documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: settings,
      diagnosticCollectionName: 'citeline',
      middleware,
      initializationFailedHandler: (error) => {
        this.output.appendLine(`[client] initialize failed: ${String(error)}`);
        return false;
      },
    };

    const client = new QuietClient('citeline', 'Citeline', serverOptions, clientOptions);
    this.client = client;
    this.status = undefined;
    this.progress = undefined;
    this.indexingTokens.clear();
    this.indexing.clear();
    this.intentionalStop = false;
    client.onDidChangeState((e) => {
      if (client !== this.client) {
        return;
      }
      if (e.newState === State.Starting) {
        this.setState('starting');
      } else if (e.newState === State.Running) {
        this.setState('running');
      } else {
        this.status = undefined;
        this.progress = undefined;
        this.indexing.clear();
        this.setState(this.intentionalStop ? 'stopped' : 'failed');
      }
    });
    client.onNotification(StatusMethod, (params: StatusResult) => {
      if (client === this.client) {
        this.status = params;
        this.changed.fire();
      }
    });
    this.setState('starting');
    try {
      await client.start();
    } catch (error) {
      this.output.appendLine(`[client] could not start "${line}": ${String(error)}`);
      this.setState('failed');
      void vscode.window
        .showErrorMessage(
          `Citeline: could not start the server (${line}). Install Citeline, or set "citeline.server.command" or "citeline.server.python".`,
          'Open Settings',
          'Show Logs',
        )
        .then((choice) => {
          if (choice === 'Open Settings') {
            void vscode.commands.executeCommand('workbench.action.openSettings', 'citeline.server');
          } else if (choice === 'Show Logs') {
            this.output.show(true);
          }
        });
      return undefined;
    }
    this.setState('running');
    void this.refreshStatus();
    return client;
  }

  /** Asks the server for its status (the notification keeps it current afterwards). */
  async refreshStatus(): Promise<StatusResult | undefined> {
    const client = this.running;
    if (!client) {
      return this.status;
    }
    try {
      const status = await client.sendRequest<StatusResult>(StatusMethod, {});
      if (client === this.client && status) {
        this.status = status;
        this.changed.fire();
      }
    } catch (error) {
      this.output.appendLine(`[client] ${StatusMethod} failed: ${String(error)}`);
    }
    return this.status;
  }

  private onWorkDoneProgress(token: string | number, params: { kind: string; title?: string; percentage?: number; message?: string }): void {
    if (params.kind === 'begin') {
      if (params.title !== undefined && !/index/i.test(params.title)) {
        return;
      }
      this.indexingTokens.add(token);
      this.progress = { title: params.title, percentage: params.percentage, message: params.message };
      this.indexing.set(token, this.progress);
    } else if (!this.indexingTokens.has(token)) {
      return;
    } else if (params.kind === 'report') {
      this.progress = {
        ...this.progress,
        percentage: params.percentage ?? this.progress?.percentage,
        message: params.message ?? this.progress?.message,
      };
      const run = this.indexing.get(token);
      this.indexing.set(token, { ...run, percentage: params.percentage ?? run?.percentage, message: params.message ?? run?.message });
    } else if (params.kind === 'end') {
      this.indexingTokens.delete(token);
      this.indexing.delete(token);
      this.progress = undefined;
    }
    this.changed.fire();
  }

  /**
   * Cancels indexing (`window/workDoneProgress/cancel`, which the server's indexing
   * progress accepts): the run of `token`, or every run. The server stops after the
   * current file; the rest is picked up by the next reindex. Resolves to the number
   * of runs asked to stop.
   */
  async cancelIndexing(token?: string | number): Promise<number> {
    const client = this.running;
    if (!client) {
      return 0;
    }
    const tokens = token === undefined ? [...this.indexing.keys()] : this.indexing.has(token) ? [token] : [];
    for (const t of tokens) {
      this.output.appendLine(`[client] cancelling indexing (${String(t)})`);
      await client.sendNotification(WorkDoneProgressCancelMethod, { token: t });
    }
    return tokens.length;
  }

  async stop(): Promise<void> {
    const client = this.client;
    if (!client) {
      return;
    }
    this.intentionalStop = true;
    try {
      if (client.state !== State.Stopped) {
        await client.stop(5000);
      }
    } catch (error) {
      this.output.appendLine(`[client] stop: ${String(error)}`);
    }
    try {
      await client.dispose(2000);
    } catch {
      // already stopped
    }
    if (this.client === client) {
      this.client = undefined;
    }
    this.status = undefined;
    this.progress = undefined;
    this.setState('stopped');
  }

  async restart(): Promise<void> {
    this.output.appendLine('[client] restarting the server');
    await this.stop();
    await this.start();
  }

  /** Sends a request to the running server (starting it if needed). */
  async request<R>(method: string, params: object, token?: vscode.CancellationToken): Promise<R> {
    const client = await this.ensureClient();
    return token ? client.sendRequest<R>(method, params, token) : client.sendRequest<R>(method, params);
  }

  /** Subscribes to `$/progress` for a partialResultToken. */
  onPartialResult<P>(client: LanguageClient, token: string, handler: (value: P) => void): vscode.Disposable {
    return client.onProgress(new ProgressType<P>(), token, handler);
  }

  /**
   * A folder added to the window is served when it holds a marker: the running server
   * hears of it from the language client (`workspace/didChangeWorkspaceFolders`, which
   * applies the folder-selection rule), and a window that had no server starts one. A
   * folder removed stops being served the same way; when the window is left with no
   * documents folder and the server serves none, the server process stops.
   */
  private onWorkspaceFoldersChanged(e: vscode.WorkspaceFoldersChangeEvent): void {
    const names = (fs: readonly vscode.WorkspaceFolder[]): string => fs.map((f) => f.uri.fsPath).join(', ') || 'none';
    this.output.appendLine(`[client] workspace folders changed: added ${names(e.added)}; removed ${names(e.removed)}`);
    const wanted = hasDocumentsFolder();
    if (!this.client) {
      if (wanted) {
        void this.start();
      }
      return;
    }
    if (wanted || e.removed.length === 0) {
      return;
    }
    // The server may still serve a folder the user asked for outside the window ("Index
    // This Folder…"): stop only once it reports serving none (it hears of the removal from
    // the language client, so its status can lag a little).
    void this.stopWhenServingNone(10);
  }

  private async stopWhenServingNone(tries: number): Promise<void> {
    for (let i = 0; i < tries; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      const client = this.client;
      if (!client || hasDocumentsFolder()) {
        return;
      }
      const status = await this.refreshStatus();
      if (client === this.client && status && status.folders.length === 0) {
        this.output.appendLine('[client] no documents folder is left in this window: stopping the server');
        await this.stop();
        return;
      }
    }
  }

  private onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration(SECTION)) {
      return;
    }
    if (!this.client && e.affectsConfiguration(`${SECTION}.folders`) && hasDocumentsFolder()) {
      // citeline.folders now names a folder in a window that had no server.
      void this.start();
      return;
    }
    if (needsRestart((key) => e.affectsConfiguration(key))) {
      // Several settings often change together (settings.json edit): restart once.
      clearTimeout(this.restartTimer);
      this.restartTimer = setTimeout(() => {
        if (this.client || hasDocumentsFolder()) {
          void this.restart();
        }
      }, 300);
      return;
    }
    const { problems } = serverSettings();
    for (const p of problems) {
      void vscode.window.showWarningMessage(`Citeline: ${p}`);
    }
    void this.sendSettings();
  }

  /** `workspace/didChangeConfiguration` with `settings.citeline` = the settings the user set. */
  private async sendSettings(): Promise<void> {
    const client = this.running;
    if (client) {
      await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: serverSettings().settings } });
    }
  }

  dispose(): void {
    clearTimeout(this.restartTimer);
    void this.stop();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
