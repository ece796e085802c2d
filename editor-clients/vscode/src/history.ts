/**
 * The answers the server recorded (wire agreement B: `citeline/history`,
 * `citeline/historyEntry`, `citeline/historyDelete`): listed in the sidebar,
 * reopened in the answer panel, searched and cleared.
 */
import * as vscode from 'vscode';

import {
  HistoryDeleteMethod,
  HistoryEntryMethod,
  HistoryMethod,
  MethodNotFound,
  type HistoryDeleteParams,
  type HistoryDeleteResult,
  type HistoryEntry,
  type HistoryParams,
  type HistoryResult,
} from './protocol';
import type { CitelineServer } from './server';

function errorCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}

export class HistoryClient {
  /** false once the server answered "method not found" (an older server keeps no history). */
  supported: boolean | undefined;

  constructor(private readonly server: CitelineServer) {}

  /** Newest first; undefined when the server is not running or keeps no history. */
  async list(params: HistoryParams): Promise<HistoryResult | undefined> {
    if (!this.server.running) {
      return undefined;
    }
    try {
      const result = await this.server.request<HistoryResult>(HistoryMethod, params);
      this.supported = true;
      return { entries: Array.isArray(result?.entries) ? result.entries : [], total: Number(result?.total ?? 0) };
    } catch (error) {
      if (errorCode(error) === MethodNotFound) {
        this.supported = false;
        return undefined;
      }
      throw error;
    }
  }

  async entry(id: string): Promise<HistoryEntry> {
    return this.server.request<HistoryEntry>(HistoryEntryMethod, { id });
  }

  async remove(params: HistoryDeleteParams): Promise<number> {
    const result = await this.server.request<HistoryDeleteResult>(HistoryDeleteMethod, params);
    return Number(result?.deleted ?? 0);
  }
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Asks for a history search string ('' clears the search). */
export async function askHistoryQuery(current: string): Promise<string | undefined> {
  return vscode.window.showInputBox({
    title: 'Citeline: Search History',
    prompt: 'Show the past questions whose question or answer contains this (empty: all).',
    value: current,
    ignoreFocusOut: true,
  });
}
