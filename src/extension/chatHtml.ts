import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { WEBVIEW_STRINGS } from '../shared/webviewStrings.ts';

// The chat panel's HTML: the bundled webview script and styles under a strict CSP, every script and
// stylesheet carrying this load's nonce.

export function nonce(): string {
  return randomBytes(16)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '');
}

/** The panel's words in VS Code's display language (the webview has no vscode.l10n of its own). */
function webviewStrings(): string {
  const table: Record<string, string> = {};
  for (const s of WEBVIEW_STRINGS) table[s] = vscode.l10n.t(s);
  // An attribute value: every character that could end or break it is escaped.
  return JSON.stringify(table).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

export function chatHtml(webview: vscode.Webview, extensionUri: vscode.Uri): string {
  const n = nonce();
  const dist = vscode.Uri.joinPath(extensionUri, 'dist');
  const asset = (name: string) => webview.asWebviewUri(vscode.Uri.joinPath(dist, name)).toString();
  const styles = ['webview-style.css', 'webview.css']
    .filter((f) => fs.existsSync(path.join(dist.fsPath, f)))
    .map((f) => `<link rel="stylesheet" nonce="${n}" href="${asset(f)}">`)
    .join('\n    ');
  // vscode-elements finds the codicon font through this id; the build copies it into dist/codicons.
  const codicons = `<link rel="stylesheet" id="vscode-codicon-stylesheet" nonce="${n}" href="${asset('codicons/codicon.css')}">`;
  const csp = [
    "default-src 'none'",
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    // Lit (vscode-elements) uses constructable stylesheets; no inline <style> without the nonce.
    `style-src ${webview.cspSource} 'nonce-${n}'`,
    `script-src 'nonce-${n}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="${vscode.env.language.replace(/[^A-Za-z0-9-]/g, '')}">
  <head>
    <meta charset="UTF-8">
    <meta http-equiv="Content-Security-Policy" content="${csp}">
    <meta name="viewport" content="width=device-width, initial-scale=1.0">
    ${codicons}
    ${styles}
    <title>Keel</title>
  </head>
  <body>
    <div id="app" data-nonce="${n}" data-l10n="${webviewStrings()}"${process.env.KEEL_DEMO === '1' ? ' data-demo="1"' : ''}></div>
    <script nonce="${n}" src="${asset('webview.js')}"></script>
  </body>
</html>`;
}
