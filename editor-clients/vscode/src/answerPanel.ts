/**
 * The answer panel: a webview showing the questions asked, their streamed
 * answers with clickable [n] markers, their sources, refusals, and a short
 * history. The HTML comes from answerRender.ts (pure, escaped); this module
 * only hosts it and relays clicks.
 */
import * as vscode from 'vscode';

import { makeNonce, renderEntry, renderHistory, renderPage, trimHistory, type AnswerEntry } from './answerRender';
import type { Citation, Hit } from './protocol';

/** Messages from the panel's script (media/answer.js). */
type FromPanel =
  | { type: 'ready' }
  | { type: 'open'; entry: string; kind: 'citation' | 'hit'; index: number }
  | { type: 'stop'; entry: string }
  | { type: 'copy'; entry: string }
  | { type: 'ask' };

export interface PanelHandlers {
  open(entry: AnswerEntry, located: Citation | Hit, column: vscode.ViewColumn | undefined): void;
  stop(entryId: string): void;
  copy(entryId: string): void;
  ask(): void;
}

export class AnswerPanel implements vscode.Disposable {
  static readonly viewType = 'citeline.answers';
  private panel: vscode.WebviewPanel | undefined;
  private entries: AnswerEntry[] = [];
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly handlers: PanelHandlers,
    private readonly maxHistory: () => number,
  ) {}

  /** Newest first. */
  get history(): readonly AnswerEntry[] {
    return this.entries;
  }

  /** The panel's column while it is visible. */
  get column(): vscode.ViewColumn | undefined {
    return this.panel?.visible ? this.panel.viewColumn : undefined;
  }

  find(id: string): AnswerEntry | undefined {
    return this.entries.find((e) => e.id === id);
  }

  show(preserveFocus = true): void {
    if (this.panel) {
      this.panel.reveal(undefined, preserveFocus);
      return;
    }
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const panel = vscode.window.createWebviewPanel(
      AnswerPanel.viewType,
      'Citeline Answers',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus },
      { enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: true, enableFindWidget: true },
    );
    panel.iconPath = vscode.Uri.joinPath(media, 'citeline.svg');
    const webview = panel.webview;
    webview.html = renderPage({
      cspSource: webview.cspSource,
      nonce: makeNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'answer.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'answer.css')).toString(),
      body: renderHistory(this.entries),
    });
    webview.onDidReceiveMessage((m: FromPanel) => this.onMessage(m));
    panel.onDidDispose(() => {
      this.panel = undefined;
    });
    this.panel = panel;
  }

  private onMessage(m: FromPanel): void {
    switch (m?.type) {
      case 'ready':
        this.renderAll();
        break;
      case 'open': {
        const entry = this.find(String(m.entry));
        const list: readonly (Citation | Hit)[] = m.kind === 'hit' ? (entry?.answer?.hits ?? []) : (entry?.answer?.citations ?? []);
        const located = list[Number(m.index)];
        if (entry && located) {
          this.handlers.open(entry, located, this.panel?.viewColumn);
        }
        break;
      }
      case 'stop':
        this.handlers.stop(String(m.entry));
        break;
      case 'copy':
        this.handlers.copy(String(m.entry));
        break;
      case 'ask':
        this.handlers.ask();
        break;
    }
  }

  /** Adds a new question at the top (older ones beyond the history size drop off). */
  add(entry: AnswerEntry): void {
    this.entries = trimHistory([entry, ...this.entries.filter((e) => e.id !== entry.id)], this.maxHistory());
    this.show(true);
    this.renderAll();
  }

  /** Re-renders one entry, at most every 60 ms while streaming; `now` flushes. */
  update(entry: AnswerEntry, now = false): void {
    this.pending.add(entry.id);
    if (now) {
      this.flush();
      return;
    }
    this.timer ??= setTimeout(() => this.flush(), 60);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const ids = [...this.pending];
    this.pending.clear();
    for (const id of ids) {
      const index = this.entries.findIndex((e) => e.id === id);
      if (index >= 0) {
        void this.panel?.webview.postMessage({ type: 'entry', id, html: renderEntry(this.entries[index], { open: index === 0 }) });
      }
    }
  }

  private renderAll(): void {
    this.pending.clear();
    void this.panel?.webview.postMessage({ type: 'render', html: renderHistory(this.entries) });
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.panel?.dispose();
  }
}
