/**
 * "Citeline: Copy Answer" and the panel's Copy button: the answer as Markdown
 * (answerCopy.ts) on the clipboard.
 */
import * as vscode from 'vscode';

import { answerMarkdown } from './answerCopy';
import type { AnswerEntry } from './answerRender';

/** The entry to copy: the one named, else the newest finished answer. */
export function entryToCopy(entries: readonly AnswerEntry[], id?: string): AnswerEntry | undefined {
  if (id !== undefined) {
    return entries.find((e) => e.id === id && e.answer);
  }
  return entries.find((e) => e.state === 'done' && e.answer);
}

export async function copyAnswer(entries: readonly AnswerEntry[], id?: string): Promise<string | undefined> {
  const entry = entryToCopy(entries, id);
  if (!entry?.answer) {
    void vscode.window.showInformationMessage('Citeline: no answer to copy yet. Ask a question first.');
    return undefined;
  }
  const markdown = answerMarkdown({ question: entry.question, answer: entry.answer, recorded: entry.recorded });
  await vscode.env.clipboard.writeText(markdown);
  const n = entry.answer.citations?.length ?? 0;
  void vscode.window.setStatusBarMessage(`Citeline: answer copied as Markdown${n ? ` with ${n} source${n === 1 ? '' : 's'}` : ''}`, 4000);
  return markdown;
}
