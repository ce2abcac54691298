import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Host } from '../../../src/agent/host.ts';
import { createTrustRoom } from '../../../src/agent/trust/room.ts';
import type { SessionController } from '../../../src/extension/sessionController.ts';
import { type OAuthTestServer, startOAuthTestServer } from '../../unit/helpers/oauthServer.ts';

// Signing in to an OAuth-protected MCP server in the real extension host: a local server (loopback)
// with a minimal authorization server; Keel's own flow asks first (modal), opens the authorization
// page with vscode.env.openExternal, and the redirect comes back to its loopback listener. The test
// answers the modal and plays the browser: it takes the URL Keel hands to openExternal and follows it
// with fetch (the authorization server signs the "user" in at once and redirects to 127.0.0.1).

interface KeelApi {
  readonly controller: SessionController;
  host(): Host;
  mcpAuth(server: string): Promise<{ signedIn: boolean; tokenSha256?: string; label?: string } | undefined>;
}

type Env = { openExternal: (uri: vscode.Uri) => Thenable<boolean> };
type Win = {
  showInformationMessage: (...args: unknown[]) => Thenable<unknown>;
  showWarningMessage: (...args: unknown[]) => Thenable<unknown>;
};

describe('MCP sign-in in VS Code', () => {
  let srv: OAuthTestServer;
  before(async () => {
    srv = await startOAuthTestServer();
  });
  after(async () => {
    await srv.close();
  });

  it('asks, opens the browser, keeps the token in SecretStorage, calls a tool; sign-out removes it', async function () {
    this.timeout(60_000);
    const ext = vscode.extensions.getExtension<KeelApi>('keel-dev.keel');
    assert.ok(ext);
    const api = await ext.activate();
    const commands = await vscode.commands.getCommands(true);
    assert.ok(commands.includes('keel.mcpSignIn') && commands.includes('keel.mcpSignOut'));
    const host = api.host();
    const root = host.workspace.roots[0]!;
    const file = path.join(root, '.vscode', 'mcp.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ servers: { remote: { type: 'http', url: srv.mcpUrl } } }));
    // The workspace's server is approved the way a user does: Keel's trust modal, answered "Approve".
    const room = createTrustRoom({ root, workspaceTrusted: vscode.workspace.isTrusted });

    const env = vscode.env as unknown as Env;
    const win = vscode.window as unknown as Win;
    const realOpen = env.openExternal;
    const realInfo = win.showInformationMessage;
    const realWarning = win.showWarningMessage;
    win.showWarningMessage = async (...args: unknown[]) => {
      const [message, , ...items] = args as [string, unknown, ...Array<{ title: string } | string>];
      if (!/this workspace supplies 1 thing that would steer Keel/.test(String(message)))
        return realWarning.apply(vscode.window, args);
      return items.find((i) => (typeof i === 'string' ? i : i.title) === 'Approve');
    };
    const asked: Array<{ message: string; modal: boolean }> = [];
    const opened: string[] = [];
    let browsed: Promise<Response> | undefined;
    win.showInformationMessage = async (...args: unknown[]) => {
      const [message, options] = args as [string, { modal?: boolean } | undefined];
      if (!/sign in to the MCP server/.test(String(message))) return realInfo.apply(vscode.window, args);
      asked.push({ message, modal: options?.modal === true });
      return 'Sign in';
    };
    env.openExternal = async (uri: vscode.Uri) => {
      opened.push(uri.toString(true));
      // The browser: the authorization page redirects to Keel's loopback listener, which takes the code.
      browsed = fetch(uri.toString(true), { redirect: 'follow' });
      return true;
    };
    try {
      api.controller.newChat();
      const session = await api.controller.ensure();
      assert.deepEqual(
        session.mcp?.status().map((s) => s.name),
        ['remote'],
      );
      assert.equal((await api.mcpAuth('remote'))?.signedIn, false);

      assert.equal(await vscode.commands.executeCommand('keel.mcpSignIn', 'remote'), true);
      assert.equal(asked.length, 1, 'Keel asked before opening the browser');
      assert.ok(asked[0]!.modal, 'the question is a modal');
      assert.equal(opened.length, 1);
      assert.match(opened[0]!, new RegExp(`^${srv.url}/authorize\\?`));
      assert.match(opened[0]!, /redirect_uri=http:\/\/127\.0\.0\.1:\d+\/callback&/);
      const page = await browsed!;
      assert.equal(page.status, 200);
      assert.match(await page.text(), /Signed in/);

      // The token is in SecretStorage (written through; compared by hash, it never leaves Keel).
      let auth = await api.mcpAuth('remote');
      for (let i = 0; i < 50 && !auth?.signedIn; i++) {
        await new Promise((r) => setTimeout(r, 100));
        auth = await api.mcpAuth('remote');
      }
      assert.equal(auth?.signedIn, true);
      assert.equal(auth?.tokenSha256, createHash('sha256').update(srv.token).digest('hex'));
      assert.equal(auth?.label, 'signed in');
      // …and nowhere a sandboxed command could read it: not in the workspace, not under keelHome.
      const inWorkspace = fs
        .readdirSync(root, { recursive: true, withFileTypes: true })
        .filter((d) => d.isFile())
        .some((d) => fs.readFileSync(path.join(d.parentPath, d.name), 'utf8').includes(srv.token));
      assert.equal(inWorkspace, false, 'the token landed in the workspace');

      const result = await session.mcp!.call('remote', 'whoami', {}, new AbortController().signal);
      assert.match(JSON.stringify(result.result.content), /signed-in-as-tester/);
      assert.equal(srv.seen.authorize, 1);

      assert.equal(await vscode.commands.executeCommand('keel.mcpSignOut', 'remote'), true);
      assert.equal((await api.mcpAuth('remote'))?.signedIn, false);
      assert.equal(
        session.mcp?.status().find((s) => s.name === 'remote')?.state,
        'stopped',
        'sign-out stops the server',
      );
    } finally {
      env.openExternal = realOpen;
      win.showInformationMessage = realInfo;
      win.showWarningMessage = realWarning;
      room.store.revoke();
      fs.rmSync(file, { force: true });
      api.controller.newChat();
    }
  });
});
