/**
 * Activation only: builds the parts and registers the commands. The work is
 * in server.ts (the daemon), ask.ts + answerPanel.ts (answers), hover.ts and
 * search.ts (passages), status.ts (status bar, status view, reindex).
 */
import * as vscode from 'vscode';

import { Asker } from './ask';
import { registerAnswerFeatures } from './features';
import { hoverMiddleware } from './hover';
import { ServerSetup } from './install';
import { searchSelection } from './search';
import { CitelineServer } from './server';
import { registerSetupFeatures } from './setupFeatures';
import { StatusUi } from './status';

let server: CitelineServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  server = new CitelineServer();
  server.extraMiddleware = hoverMiddleware(server);
  const s = server;
  const asker = new Asker(context.extensionUri, s);
  const status = new StatusUi(s);
  context.subscriptions.push(
    asker,
    status,
    vscode.commands.registerCommand('citeline.askQuestion', (question?: unknown) =>
      typeof question === 'string' && question.trim() ? asker.ask(question.trim()) : asker.askInteractive(),
    ),
    vscode.commands.registerCommand('citeline.searchSelection', (query?: unknown) => searchSelection(s, typeof query === 'string' ? query : undefined, () => asker.panel.column)),
    vscode.commands.registerCommand('citeline.reindexNow', () => status.reindex()),
    vscode.commands.registerCommand('citeline.showStatus', () => status.show()),
    vscode.commands.registerCommand('citeline.showLogs', () => s.output.show(true)),
    vscode.commands.registerCommand('citeline.showAnswers', () => asker.panel.show(false)),
    vscode.commands.registerCommand('citeline.restartServer', () => s.restart()),
  );
  const setup = new ServerSetup(context, s.output);
  s.locate = (cmd, offer) => setup.locate(cmd, offer);
  registerSetupFeatures(context, s, setup);
  registerAnswerFeatures(context, s, asker, () => status.sidebarShown());
  void s.startIfUseful();
}

export async function deactivate(): Promise<void> {
  const s = server;
  server = undefined;
  if (s) {
    await s.stop();
    s.dispose();
  }
}
