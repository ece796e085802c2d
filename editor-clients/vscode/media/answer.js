// The answer panel's script. The host sends HTML it rendered and escaped
// (src/answerRender.ts); this script only swaps it in and reports clicks.
// @ts-check
(function () {
  // eslint-disable-next-line no-undef
  const vscode = acquireVsCodeApi();
  const history = /** @type {HTMLElement} */ (document.getElementById('history'));

  /** @param {string} html */
  function parse(html) {
    const template = document.createElement('template');
    template.innerHTML = html;
    return template.content;
  }

  window.addEventListener('message', (event) => {
    const m = event.data;
    if (!m || typeof m !== 'object') {
      return;
    }
    if (m.type === 'render' && typeof m.html === 'string') {
      history.replaceChildren(parse(m.html));
    } else if (m.type === 'entry' && typeof m.html === 'string') {
      const old = document.getElementById('entry-' + m.id);
      const fresh = parse(m.html);
      if (old) {
        // Keep the user's open/closed choice for older entries.
        const first = fresh.firstElementChild;
        if (first instanceof HTMLDetailsElement && old instanceof HTMLDetailsElement && old !== history.firstElementChild) {
          first.open = old.open;
        }
        old.replaceWith(fresh);
      } else {
        history.prepend(fresh);
      }
    }
  });

  document.addEventListener('click', (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) {
      return;
    }
    const link = target.closest('[data-kind]');
    if (link instanceof HTMLElement && link.dataset.entry !== undefined) {
      event.preventDefault();
      vscode.postMessage({ type: 'open', entry: link.dataset.entry, kind: link.dataset.kind, index: Number(link.dataset.index) });
      return;
    }
    const action = target.closest('[data-action]');
    if (action instanceof HTMLElement) {
      event.preventDefault();
      if (action.dataset.action === 'stop') {
        vscode.postMessage({ type: 'stop', entry: action.dataset.entry });
      } else if (action.dataset.action === 'copy') {
        vscode.postMessage({ type: 'copy', entry: action.dataset.entry });
      } else if (action.dataset.action === 'ask') {
        vscode.postMessage({ type: 'ask' });
      }
    }
  });

  vscode.postMessage({ type: 'ready' });
})();
