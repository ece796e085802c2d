/**
 * Opens a citation or search hit: the file with the cited lines selected and
 * revealed, or a PDF at its page.
 */
import * as vscode from 'vscode';

import { citationTarget, fullLocation, localCopyDiffers, passageMarkdown, pdfPageUri, type CitationTarget, type Located } from './citations';
import { pdfViewerSetting } from './config';
import { citedText } from './pdfMatch';
import type { Answer } from './protocol';

/** The bundled PDF viewer (pdfViewer.ts), once registered: true when it showed the PDF. */
type PdfOpener = (target: { uri: string; page: number }, label: string, text: ReturnType<typeof citedText>, avoid?: vscode.ViewColumn) => Promise<boolean>;
let builtinPdf: PdfOpener | undefined;

export function setPdfOpener(opener: PdfOpener | undefined): void {
  builtinPdf = opener;
}

/** An installed extension's custom editor for `*.pdf`, if any. */
export function findPdfViewer(): { viewType: string; extension: string } | undefined {
  for (const ext of vscode.extensions.all) {
    const editors = ext.packageJSON?.contributes?.customEditors;
    if (!Array.isArray(editors)) {
      continue;
    }
    for (const editor of editors) {
      const selectors: unknown[] = Array.isArray(editor?.selector) ? editor.selector : [];
      const pdf = selectors.some((s) => typeof (s as { filenamePattern?: unknown })?.filenamePattern === 'string' && /\.pdf$/i.test((s as { filenamePattern: string }).filenamePattern));
      if (pdf && typeof editor.viewType === 'string') {
        return { viewType: editor.viewType, extension: ext.packageJSON?.displayName ?? ext.id };
      }
    }
  }
  return undefined;
}

/** Where to open a cited file: the editor being worked in, never over the answer panel. */
function editorColumn(avoid?: vscode.ViewColumn): vscode.ViewColumn {
  const active = vscode.window.activeTextEditor?.viewColumn;
  if (active !== undefined && active !== avoid) {
    return active;
  }
  const other = vscode.window.visibleTextEditors.map((e) => e.viewColumn).find((c) => c !== undefined && c !== avoid);
  if (other !== undefined) {
    return other;
  }
  if (avoid === undefined) {
    return active ?? vscode.ViewColumn.Active;
  }
  return avoid === vscode.ViewColumn.One ? vscode.ViewColumn.Two : vscode.ViewColumn.One;
}

async function openText(target: Extract<CitationTarget, { kind: 'text' }>, avoid?: vscode.ViewColumn): Promise<vscode.TextEditor> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(target.uri, true));
  const last = Math.max(0, doc.lineCount - 1);
  const startLine = Math.min(target.startLine, last);
  const endLine = Math.min(Math.max(target.endLine, startLine), last);
  const start = new vscode.Position(startLine, Math.min(target.startCharacter, doc.lineAt(startLine).range.end.character));
  const endChar = target.endCharacter === 'eol' ? doc.lineAt(endLine).range.end.character : Math.min(target.endCharacter, doc.lineAt(endLine).range.end.character);
  const end = new vscode.Position(endLine, endChar);
  const selection = new vscode.Selection(start, end);
  const editor = await vscode.window.showTextDocument(doc, {
    viewColumn: editorColumn(avoid),
    selection,
    preview: true,
    preserveFocus: false,
  });
  editor.selection = selection;
  editor.revealRange(selection, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}

/** Opens a PDF outside the bundled viewer: a PDF viewer extension, else the system's viewer (or VS Code's). */
export async function openPdfExternally(target: { uri: string; page: number }, label: string, avoid?: vscode.ViewColumn): Promise<void> {
  await openPdf({ kind: 'pdf', ...target }, label, avoid);
}

async function openPdf(target: Extract<CitationTarget, { kind: 'pdf' }>, label: string, avoid?: vscode.ViewColumn): Promise<void> {
  const withPage = vscode.Uri.parse(pdfPageUri(target.uri, target.page), true);
  const plain = vscode.Uri.parse(target.uri, true);
  const viewer = findPdfViewer();
  const where = `${label} (page ${target.page})`;
  if (viewer) {
    await vscode.commands.executeCommand('vscode.openWith', withPage, viewer.viewType, editorColumn(avoid));
    void vscode.window.showInformationMessage(`Citeline: opened ${where} in ${viewer.extension}; the cited passage is on page ${target.page}.`);
    return;
  }
  const local = vscode.env.uiKind === vscode.UIKind.Desktop && !vscode.env.remoteName;
  if (local && (await vscode.env.openExternal(plain))) {
    void vscode.window.showInformationMessage(`Citeline: opened ${where} in the system's PDF viewer; go to page ${target.page}.`);
    return;
  }
  await vscode.commands.executeCommand('vscode.open', plain, editorColumn(avoid));
  void vscode.window.showInformationMessage(
    `Citeline: the cited passage is on page ${target.page} of ${label}. Install a PDF viewer extension to see it inside the editor.`,
  );
}

/** Shows the indexed passage in a read-only preview: the local file is not the indexed one. */
async function showPassage(c: Located, avoid?: vscode.ViewColumn): Promise<void> {
  const doc = await vscode.workspace.openTextDocument({ content: passageMarkdown(c), language: 'markdown' });
  await vscode.window.showTextDocument(doc, { viewColumn: editorColumn(avoid), preview: true, preserveFocus: false });
  void vscode.window.showInformationMessage(`Citeline: ${c.path}: ${c.local_copy_note ?? c.local_copy}; showing the indexed passage.`);
}

/**
 * Opens what a citation or hit points at (its indexed passage when the local copy
 * differs). A PDF opens in the bundled viewer at its page with the passage
 * highlighted (`answer`: the answer it is cited by, for the text to highlight),
 * unless `citeline.pdf.viewer` is `external`.
 */
export async function openLocated(c: Located & { n?: number }, avoid?: vscode.ViewColumn, answer?: Answer): Promise<void> {
  const target = citationTarget(c);
  try {
    if (localCopyDiffers(c)) {
      await showPassage(c, avoid);
    } else if (target.kind === 'pdf') {
      const builtin = builtinPdf && pdfViewerSetting(vscode.Uri.parse(target.uri, true)) === 'builtin';
      if (!builtin || !(await builtinPdf!(target, c.path, citedText(c, answer), avoid))) {
        if (!builtin) {
          await openPdf(target, c.path, avoid);
        }
      }
    } else {
      await openText(target, avoid);
    }
  } catch (error) {
    void vscode.window.showErrorMessage(`Citeline: cannot open ${fullLocation(c)}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
