/**
 * "Citeline: Ask a Question…": input box -> `citeline/ask` with a
 * partialResultToken -> the answer streams into the answer panel.
 */
import * as vscode from 'vscode';

import { settle, type AnswerEntry } from './answerRender';
import { AnswerPanel } from './answerPanel';
import { historySize } from './config';
import { copyAnswer } from './copy';
import { openLocated } from './openCitation';
import { AskMethod, RequestCancelled, type Answer, type AskDelta, type AskParams } from './protocol';
import { CitelineServer } from './server';
import { folderChoices } from './sidebarModel';

function errorCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class Asker implements vscode.Disposable {
  readonly panel: AnswerPanel;
  private counter = 0;
  private readonly running = new Map<string, vscode.CancellationTokenSource>();
  private readonly finished = new vscode.EventEmitter<AnswerEntry>();
  /** Fires when an ask is over (answered, refused, stopped or failed). */
  readonly onDidFinish = this.finished.event;
  /** The folder last chosen in the folder picker (undefined: all folders). */
  private lastFolder: string | undefined;

  constructor(
    extensionUri: vscode.Uri,
    private readonly server: CitelineServer,
  ) {
    this.panel = new AnswerPanel(
      extensionUri,
      {
        open: (entry, located, column) => void openLocated(located, column, entry.answer),
        stop: (id) => this.stop(id),
        copy: (id) => void copyAnswer(this.panel.history, id),
        ask: () => void this.askInteractive(),
      },
      historySize,
    );
  }

  /**
   * Prompts for a question and asks it. With several folders served, first asks
   * which one (or all: the server picks the best match), unless `folder` is given.
   */
  async askInteractive(folder?: string): Promise<void> {
    if (folder === undefined) {
      const choices = folderChoices(this.server.status, this.lastFolder);
      if (choices.length > 0) {
        const picked = await vscode.window.showQuickPick(
          choices.map((c) => ({ ...c, description: c.description })),
          { title: 'Citeline: Ask which folder?', placeHolder: 'The documents folder to answer from', ignoreFocusOut: true },
        );
        if (!picked) {
          return;
        }
        folder = picked.folder;
        this.lastFolder = folder;
      }
    }
    const question = await vscode.window.showInputBox({
      title: 'Citeline: Ask a Question',
      prompt: 'Ask your documents. The answer cites the file, section, lines or page.',
      placeHolder: 'e.g. Where does Citeline store its index?',
      ignoreFocusOut: true,
    });
    if (question && question.trim()) {
      await this.ask(question.trim(), folder);
    }
  }

  /** Asks one question (of one folder, or of all); the answer streams into the panel. Resolves when it is done. */
  async ask(question: string, folder?: string): Promise<AnswerEntry> {
    const id = String(++this.counter);
    const entry: AnswerEntry = { id, question, state: 'streaming', text: '', startedAt: Date.now() };
    this.panel.add(entry);
    const cts = new vscode.CancellationTokenSource();
    this.running.set(id, cts);
    let progress: vscode.Disposable | undefined;
    try {
      const client = await this.server.ensureClient();
      const token = `citeline-ask-${id}-${Date.now()}`;
      progress = this.server.onPartialResult<AskDelta>(client, token, (value) => {
        if (entry.state === 'streaming' && value && typeof value.delta === 'string') {
          entry.text += value.delta;
          this.panel.update(entry);
        }
      });
      const params: AskParams = { question, partialResultToken: token, ...(folder ? { folder } : {}) };
      const answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Citeline: answering…' },
        () => this.untilCancelled(client.sendRequest<Answer>(AskMethod, params, cts.token), cts.token),
      );
      if (entry.text && typeof answer?.answer === 'string' && entry.text !== answer.answer) {
        // A generative answer settles: sentences the check removed are gone from the final text.
        this.server.output.appendLine(
          `[client] ${AskMethod}: the answer settled (${entry.text.length} chars streamed, ${answer.answer.length} final; mode ${answer.mode ?? 'none'})`,
        );
      }
      if (entry.state === 'streaming') {
        settle(entry, answer);
      }
    } catch (error) {
      if (entry.state === 'streaming') {
        if (cts.token.isCancellationRequested || errorCode(error) === RequestCancelled) {
          entry.state = 'cancelled';
        } else {
          entry.state = 'error';
          entry.error = `Citeline could not answer: ${errorMessage(error)}`;
          this.server.output.appendLine(`[client] ${AskMethod} failed: ${errorMessage(error)}`);
        }
      }
    } finally {
      progress?.dispose();
      this.running.delete(id);
      cts.dispose();
      entry.finishedAt = Date.now();
      this.panel.update(entry, true);
      this.finished.fire(entry);
    }
    return entry;
  }

  /**
   * The request's result; after a cancellation, rejects if the server has not
   * answered (with error -32800 or a result) within a few seconds.
   */
  private untilCancelled<T>(request: Promise<T>, token: vscode.CancellationToken): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const sub = token.onCancellationRequested(() => {
        timer = setTimeout(() => reject(new Error('cancelled')), 5000);
      });
      request.then(
        (v) => {
          clearTimeout(timer);
          sub.dispose();
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          sub.dispose();
          reject(e);
        },
      );
    });
  }

  stop(id: string): void {
    this.running.get(id)?.cancel();
  }

  dispose(): void {
    for (const cts of this.running.values()) {
      cts.cancel();
    }
    this.panel.dispose();
    this.finished.dispose();
  }
}
