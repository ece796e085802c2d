/**
 * Finding the server, and installing it when there is none: one notification
 * offers to install it from a wheelhouse (the one a platform `.vsix` carries, or a
 * folder the user picks, e.g. the release's `dist/wheelhouse`) into a venv in the
 * extension's global storage, with a progress notification; or the Python
 * extension's selected interpreter is used when it has Citeline. The rules are in
 * serverSetup.ts.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';

import {
  choosePython,
  interpreterOf,
  failureLine,
  installSteps,
  megabytes,
  onPath,
  ownServerLayout,
  readWheelhouse,
  serveWith,
  serveWithPython,
  type PythonCandidate,
  type PythonExtensionApi,
  type Wheelhouse,
} from './serverSetup';
import { SECTION, type ServerCommand } from './settings';

const exists = (p: string): boolean => {
  try {
    return fs.existsSync(p);
  } catch {
    return false;
  }
};

function run(command: string, args: string[], timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, PIP_NO_INPUT: '1' } }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}\n${stderr}${error && !stderr ? String(error) : ''}` });
    });
  });
}

function wheelhouseAt(dir: string): Wheelhouse | undefined {
  try {
    const files = fs.readdirSync(dir).map((name) => ({ name, size: fs.statSync(path.join(dir, name)).size }));
    const info = readWheelhouse(files);
    return info.citeline ? info : undefined;
  } catch {
    return undefined;
  }
}

export class ServerSetup {
  private offering: Promise<ServerCommand | undefined> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.OutputChannel,
  ) {}

  private get layout(): ReturnType<typeof ownServerLayout> {
    return ownServerLayout(this.context.globalStorageUri.fsPath);
  }

  /** The wheelhouse to offer: `citeline.server.wheelhouse`, else the one inside this extension (a platform-specific `.vsix`). */
  get bundledWheelhouse(): string | undefined {
    const configured = vscode.workspace.getConfiguration(SECTION).get<string>('server.wheelhouse', '').trim();
    for (const dir of [configured, path.join(this.context.extensionPath, 'wheelhouse')]) {
      if (dir && wheelhouseAt(dir)) {
        return dir;
      }
    }
    return undefined;
  }

  /**
   * The server to start when the settings name none (`base.source === 'PATH'`), or
   * undefined when there is none. Offers the install at most once at a time.
   */
  async locate(base: ServerCommand, offer: boolean): Promise<ServerCommand | undefined> {
    if (base.source !== 'PATH') {
      return base;
    }
    const fromPython = await this.pythonExtensionServer();
    if (fromPython) {
      return fromPython;
    }
    if (exists(this.layout.citeline)) {
      return serveWith(this.layout.citeline, 'installed by the extension');
    }
    if (onPath(path.basename(base.command), process.env.PATH, exists)) {
      return base;
    }
    if (!offer) {
      return undefined;
    }
    this.offering ??= this.offer().finally(() => {
      this.offering = undefined;
    });
    return this.offering;
  }

  /**
   * The Python extension's selected interpreter, when it has Citeline. Read through the
   * API `ms-python.python` exports: `environments.getActiveEnvironmentPath(resource)`
   * (`{ id, path }`), else the older `settings.getExecutionDetails(resource).execCommand`;
   * `ready` is awaited first (bounded), as its documentation asks.
   */
  private async pythonExtensionServer(): Promise<ServerCommand | undefined> {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (!ext) {
      return undefined;
    }
    try {
      const api = (ext.isActive ? ext.exports : await ext.activate()) as PythonExtensionApi | undefined;
      if (api?.ready) {
        await Promise.race([api.ready, new Promise((r) => setTimeout(r, 10_000))]);
      }
      const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
      const python = interpreterOf(api, resource, exists, (p) => {
        try {
          return fs.statSync(p).isDirectory();
        } catch {
          return false;
        }
      });
      if (!python) {
        return undefined;
      }
      const probe = await run(python, ['-c', 'import citeline.cli'], 20_000);
      if (probe.code === 0) {
        this.output.appendLine(`[client] the Python extension's interpreter has Citeline: ${python}`);
        return serveWithPython(python, "the Python extension's interpreter");
      }
      this.output.appendLine(`[client] the Python extension's interpreter has no Citeline: ${python}`);
    } catch (error) {
      this.output.appendLine(`[client] the Python extension's interpreter: ${String(error)}`);
    }
    return undefined;
  }

  /** The one notification: install from the bundled wheelhouse, or from a folder the user picks. */
  private async offer(): Promise<ServerCommand | undefined> {
    const bundled = this.bundledWheelhouse;
    const bundledInfo = bundled ? wheelhouseAt(bundled) : undefined;
    const install = bundledInfo ? `Install (${megabytes(bundledInfo.bytes)}, offline)` : undefined;
    const pick = 'Choose a Wheelhouse…';
    const settings = 'Settings';
    const message = bundled
      ? "Citeline's server is not installed. Install it now? It goes into a Python environment of this extension's own; nothing is downloaded."
      : "Citeline's server is not installed. Install it from a Citeline wheelhouse folder (the release's dist/wheelhouse), or set citeline.server.command.";
    const choice = await vscode.window.showInformationMessage(message, ...(install ? [install] : []), pick, settings);
    if (choice === settings) {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'citeline.server');
      return undefined;
    }
    let wheelhouse: string | undefined;
    if (choice !== undefined && choice === install) {
      wheelhouse = bundled;
    } else if (choice === pick) {
      wheelhouse = await this.pickWheelhouse();
    }
    return wheelhouse ? this.install(wheelhouse) : undefined;
  }

  private async pickWheelhouse(): Promise<string | undefined> {
    const uris = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: 'Install from this wheelhouse' });
    const dir = uris?.[0]?.fsPath;
    if (!dir) {
      return undefined;
    }
    if (!wheelhouseAt(dir)) {
      void vscode.window.showErrorMessage(`Citeline: ${dir} holds no citeline wheel; choose the release's wheelhouse folder.`);
      return undefined;
    }
    return dir;
  }

  /** Installs the server from `wheelhouse` with a progress notification; its command, or undefined. */
  async install(wheelhouse: string): Promise<ServerCommand | undefined> {
    const info = wheelhouseAt(wheelhouse);
    if (!info) {
      void vscode.window.showErrorMessage(`Citeline: ${wheelhouse} holds no citeline wheel.`);
      return undefined;
    }
    const python = choosePython(await this.pythonCandidates(), info);
    if (!python) {
      const wanted = info.pythons.length ? `Python ${info.pythons.join(' or ')}` : 'Python 3.11 or newer';
      void vscode.window.showErrorMessage(`Citeline: installing the server needs ${wanted}; none was found on the PATH or in the Python extension. Install it, then run "Citeline: Install the Server…".`);
      return undefined;
    }
    const layout = this.layout;
    fs.mkdirSync(path.dirname(layout.venv), { recursive: true });
    const started = Date.now();
    this.output.appendLine(`[client] installing the server from ${wheelhouse} with ${python.path} into ${layout.venv}`);
    const failure = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Citeline: installing the server', cancellable: false },
      async (progress) => {
        const steps = installSteps(python.path, layout.venv, layout.python, wheelhouse);
        for (const [i, step] of steps.entries()) {
          progress.report({ message: `${step.title}…`, increment: i === 0 ? 5 : 15 });
          const result = await run(step.command, step.args, 900_000);
          this.output.appendLine(`[client] ${step.command} ${step.args.join(' ')}: exit ${result.code}`);
          if (result.code !== 0) {
            this.output.appendLine(result.output);
            return `${step.title} failed: ${failureLine(result.output)}`;
          }
        }
        progress.report({ message: 'checking it…', increment: 70 });
        const check = await run(layout.citeline, ['--version'], 60_000);
        return check.code === 0 ? undefined : `the installed server does not run: ${failureLine(check.output)}`;
      },
    );
    if (failure) {
      void vscode.window.showErrorMessage(`Citeline: ${failure}`, 'Show Logs').then((c) => {
        if (c) {
          this.output.show(true);
        }
      });
      return undefined;
    }
    this.output.appendLine(`[client] server installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    void vscode.window.setStatusBarMessage('Citeline: server installed', 5000);
    return serveWith(layout.citeline, 'installed by the extension');
  }

  /** Interpreters to make the venv with: the Python extension's, then the PATH's. */
  private async pythonCandidates(): Promise<PythonCandidate[]> {
    const paths: string[] = [];
    const configured = vscode.workspace.getConfiguration(SECTION).get<string>('server.python', '').trim();
    if (configured) {
      paths.push(configured);
    }
    for (const name of ['python3.11', 'python3.12', 'python3.13', 'python3']) {
      const found = onPath(name, process.env.PATH, exists);
      if (found) {
        paths.push(found);
      }
    }
    const candidates: PythonCandidate[] = [];
    for (const p of [...new Set(paths)]) {
      const probe = await run(p, ['-c', 'import sys; print(sys.version_info[0], sys.version_info[1])'], 20_000);
      const m = /^(\d+) (\d+)/.exec(probe.output.trim());
      candidates.push(m && probe.code === 0 ? { path: p, version: [Number(m[1]), Number(m[2])] } : { path: p });
    }
    return candidates;
  }

  /** "Citeline: Install the Server…": the offer, on demand. */
  async installInteractive(): Promise<ServerCommand | undefined> {
    this.offering ??= this.offer().finally(() => {
      this.offering = undefined;
    });
    return this.offering;
  }
}
