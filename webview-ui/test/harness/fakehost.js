// Stands in for the VS Code webview API in the browser test: records posted messages, keeps setState
// in sessionStorage (so a reload behaves like a re-shown view) and collects CSP violations.
window.__posted = [];
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) =>
  window.__violations.push(e.violatedDirective + ' ' + e.blockedURI),
);
window.acquireVsCodeApi = () => ({
  postMessage: (m) => window.__posted.push(m),
  getState: () => {
    const s = sessionStorage.getItem('state');
    return s ? JSON.parse(s) : undefined;
  },
  setState: (s) => sessionStorage.setItem('state', JSON.stringify(s)),
});
const theme = new URLSearchParams(location.search).get('theme') || 'dark';
document.body.className = 'vscode-' + theme;
document.documentElement.dataset.theme = theme;
// ?demo=1: the panel as `npm start` serves it without an API key (the host marks #app).
if (new URLSearchParams(location.search).get('demo') === '1') {
  const app = document.createElement('div');
  app.id = 'app';
  app.dataset.demo = '1';
  document.body.appendChild(app);
}
