// Stands in for the Python extension (ms-python.python) in Citeline's end-to-end test
// (scripts/e2e-install.sh): code-server has no Python extension and the test runs with
// no marketplace. It exports the part of the Python extension's documented API that
// Citeline reads, with the same shapes:
//   ready: Promise<void>
//   environments.getActiveEnvironmentPath(resource?) -> { id, path }
//   environments.onDidChangeActiveEnvironmentPath: Event<{ id, path, resource }>
//   settings.getExecutionDetails(resource?) -> { execCommand: string[] | undefined }
// The selected interpreter is the python.defaultInterpreterPath setting (the Python
// extension's own setting for it). It is never published.
const vscode = require('vscode');

function selected(resource) {
  const value = vscode.workspace.getConfiguration('python', resource ?? null).get('defaultInterpreterPath', 'python');
  return typeof value === 'string' && value.trim() ? value.trim() : 'python';
}

function activate(context) {
  const changed = new vscode.EventEmitter();
  const calls = vscode.window.createOutputChannel('Python API stand-in');
  context.subscriptions.push(
    changed,
    calls,
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('python.defaultInterpreterPath')) {
        const p = selected();
        changed.fire({ id: p, path: p, resource: undefined });
      }
    }),
  );
  const log = (what, resource, result) => calls.appendLine(`${what}(${resource ? resource.toString() : ''}) -> ${JSON.stringify(result)}`);
  return {
    ready: Promise.resolve(),
    environments: {
      getActiveEnvironmentPath(resource) {
        const p = selected(resource);
        const result = { id: p, path: p };
        log('environments.getActiveEnvironmentPath', resource, result);
        return result;
      },
      onDidChangeActiveEnvironmentPath: changed.event,
    },
    settings: {
      getExecutionDetails(resource) {
        const result = { execCommand: [selected(resource)] };
        log('settings.getExecutionDetails', resource, result);
        return result;
      },
    },
  };
}

function deactivate() {}

module.exports = { activate, deactivate };
