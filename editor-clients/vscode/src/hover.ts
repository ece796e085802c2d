/**
 * Hover-to-search: when the mouse rests inside a selection, the hover request
 * carries the selected text as `{"citeline": {"selection": "…"}}` and the
 * server answers with the top passages (Markdown, with links to their places).
 */
import * as vscode from 'vscode';
import { HoverRequest, type HoverParams, type Middleware } from 'vscode-languageclient/node';

import { hoverMode } from './config';
import type { HoverExtension } from './protocol';
import type { CitelineServer } from './server';

/** Longest selection sent (characters). */
export const MAX_SELECTION = 2000;

/** The non-empty selection of a visible editor on `document` that contains `position`. */
export function selectionAt(document: vscode.TextDocument, position: vscode.Position): string | undefined {
  const editors = vscode.window.visibleTextEditors.filter((e) => e.document === document);
  // The active editor first: its selection is the one the user is looking at.
  editors.sort((a, b) => Number(b === vscode.window.activeTextEditor) - Number(a === vscode.window.activeTextEditor));
  for (const editor of editors) {
    for (const selection of editor.selections) {
      if (!selection.isEmpty && selection.contains(position)) {
        const text = document.getText(selection).trim();
        if (text) {
          return text.length > MAX_SELECTION ? text.slice(0, MAX_SELECTION) : text;
        }
      }
    }
  }
  return undefined;
}

export function hoverMiddleware(server: CitelineServer): Pick<Middleware, 'provideHover'> {
  return {
    provideHover: async (document, position, token, next) => {
      const mode = hoverMode();
      if (mode === 'off') {
        return undefined;
      }
      const selection = selectionAt(document, position);
      if (selection === undefined) {
        return mode === 'always' ? next(document, position, token) : undefined;
      }
      const client = server.running;
      if (!client) {
        return undefined;
      }
      const params: HoverParams & HoverExtension = {
        ...client.code2ProtocolConverter.asTextDocumentPositionParams(document, position),
        citeline: { selection },
      };
      try {
        const result = await client.sendRequest(HoverRequest.type, params, token);
        if (token.isCancellationRequested || !result) {
          return undefined;
        }
        return client.protocol2CodeConverter.asHover(result);
      } catch (error) {
        if (!token.isCancellationRequested) {
          server.output.appendLine(`[client] hover failed: ${String(error)}`);
        }
        return undefined;
      }
    },
  };
}
