/**
 * "Citeline: Search Selection": `citeline/search` for the selected text (or
 * the word under the cursor, or what the user types); results in a quick
 * pick; the chosen one opens at its place.
 */
import * as vscode from 'vscode';

import { hitPickItem, oneLine } from './citations';
import { openLocated } from './openCitation';
import { SearchMethod, type Hit, type SearchResult } from './protocol';
import { MAX_SELECTION } from './hover';
import type { CitelineServer } from './server';

interface HitItem extends vscode.QuickPickItem {
  hit: Hit;
}

function queryFromEditor(): string {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return '';
  }
  const selected = editor.selections
    .filter((s) => !s.isEmpty)
    .map((s) => editor.document.getText(s))
    .join('\n')
    .trim();
  if (selected) {
    return selected.slice(0, MAX_SELECTION);
  }
  const word = editor.document.getWordRangeAtPosition(editor.selection.active);
  return word ? editor.document.getText(word) : '';
}

export async function searchSelection(server: CitelineServer, query?: string, avoidColumn?: () => vscode.ViewColumn | undefined): Promise<void> {
  let text = (query ?? queryFromEditor()).trim();
  if (!text) {
    text = (await vscode.window.showInputBox({ title: 'Citeline: Search', prompt: 'Search the documents for', ignoreFocusOut: true }))?.trim() ?? '';
    if (!text) {
      return;
    }
  }
  const pick = vscode.window.createQuickPick<HitItem>();
  pick.title = `Citeline: passages for “${oneLine(text, 60)}”`;
  pick.placeholder = 'Searching the documents…';
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  pick.busy = true;
  pick.show();
  const cts = new vscode.CancellationTokenSource();
  pick.onDidHide(() => {
    cts.cancel();
    pick.dispose();
  });
  pick.onDidAccept(() => {
    const chosen = pick.selectedItems[0];
    pick.hide();
    if (chosen) {
      void openLocated(chosen.hit, avoidColumn?.());
    }
  });
  try {
    const result = await server.request<SearchResult>(SearchMethod, { query: text }, cts.token);
    const hits = result?.hits ?? [];
    pick.items = hits.map((hit) => ({ ...hitPickItem(hit), hit }));
    pick.placeholder = hits.length ? 'Choose a passage to open it' : 'No passages found (is the folder indexed?)';
  } catch (error) {
    if (!cts.token.isCancellationRequested) {
      pick.placeholder = `Search failed: ${error instanceof Error ? error.message : String(error)}`;
    }
  } finally {
    pick.busy = false;
  }
}
