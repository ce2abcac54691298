import * as path from 'node:path';
import * as vscode from 'vscode';
import type { McpPort } from '../agent/host.ts';
import type { McpManager, McpServerStatus } from '../agent/mcp/manager.ts';
import { authorizeInBrowser, mcpAuthStatus, openSecretTokenStore, signIn, signOut } from './mcpAuth.ts';
import type { SessionController } from './sessionController.ts';

// MCP in VS Code: a workspace-defined server starts only after a native modal naming its exact command
// line (remembered per workspace + definition hash); `${input:id}` is asked once and kept in
// SecretStorage; "Keel: MCP Servers" lists the servers with their state and starts/stops/restarts them.

const SECRET_PREFIX = 'keel.mcp.input.';

export function createVscodeMcpPort(
  context: vscode.ExtensionContext,
  _workspaceRoot: () => string | undefined,
): McpPort {
  return {
    allowReadOnlyCalls: () => {
      const inspected = vscode.workspace.getConfiguration('keel').inspect<boolean>('mcp.allowReadOnlyCalls');
      // Machine-scoped: a workspace cannot turn it on for itself.
      return (inspected?.globalValue ?? inspected?.defaultValue) === true;
    },
    // Reached only for a server the trust room has no approval for; the answer is kept there.
    async approveServer(request, signal) {
      if (signal?.aborted || !vscode.workspace.isTrusted) return false;
      const ALLOW = 'Allow and Start';
      const choice = await vscode.window.showWarningMessage(
        vscode.l10n.t('Keel: start the MCP server "{0}" defined by this workspace?', request.server),
        {
          modal: true,
          detail: `${path.basename(path.dirname(request.file))}/${path.basename(request.file)}:\n\n${request.grants.join('\n')}\n\n${vscode.l10n.t('An MCP server can run any program with your permissions. Keel remembers your answer for this workspace until the definition changes.')}`,
        },
        { title: vscode.l10n.t(ALLOW), key: ALLOW },
      );
      return choice?.key === ALLOW;
    },
    async resolveInput(input) {
      const key = `${SECRET_PREFIX}${input.id}`;
      const stored = await context.secrets.get(key);
      if (stored !== undefined) return stored;
      const value = await vscode.window.showInputBox({
        title: `Keel: MCP input "${input.id}"`,
        prompt:
          input.description ??
          `Value for \${input:${input.id}} in mcp.json (kept in VS Code's secret storage)`,
        password: input.password ?? true,
        ignoreFocusOut: true,
      });
      if (value === undefined) return undefined;
      await context.secrets.store(key, value);
      return value;
    },
    howToApprove: () =>
      'approve it in the dialog Keel shows, or start it with the command "Keel: MCP Servers".',
    authorize: (request, signal) => authorizeInBrowser(request, signal),
    openTokenStore: (server, url) => openSecretTokenStore(context.secrets, server, url),
  };
}

const STATE_LABEL: Record<McpServerStatus['state'], string> = {
  not_started: 'not started',
  starting: 'starting…',
  running: 'running',
  failed: 'failed',
  crashed: 'crashed',
  denied: 'not approved',
  stopped: 'stopped',
};

const ICON: Record<McpServerStatus['state'], string> = {
  not_started: '$(circle-outline)',
  starting: '$(loading~spin)',
  running: '$(pass-filled)',
  failed: '$(error)',
  crashed: '$(error)',
  denied: '$(shield)',
  stopped: '$(circle-slash)',
};

/** One quick-pick row per server: state, tool count, sign-in state (HTTP servers), and why it failed. */
export function serverItem(s: McpServerStatus, auth?: string): vscode.QuickPickItem & { server: string } {
  const tools = s.toolCount !== undefined ? ` · ${s.toolCount} tools` : '';
  return {
    server: s.name,
    label: `${ICON[s.state]} ${s.name}`,
    description: `${STATE_LABEL[s.state]}${tools}${auth ? ` · ${auth}` : ''} · ${s.scope === 'workspace' ? 'workspace' : s.scope === 'user' ? 'user' : 'named'}`,
    detail: s.reason ? s.reason.split('\n')[0] : s.commandLine,
  };
}

async function act(
  manager: McpManager,
  name: string,
  log: (m: string) => void,
  secrets: vscode.SecretStorage,
): Promise<void> {
  const status = manager.status().find((s) => s.name === name);
  if (!status) return;
  const running = status.state === 'running';
  const auth = await mcpAuthStatus(secrets, manager, name);
  const actions = [
    ...(running ? ['Restart', 'Stop'] : ['Start']),
    ...(auth.remote ? (auth.signedIn ? ['Sign out'] : ['Sign in']) : []),
  ];
  const action = await vscode.window.showQuickPick(actions, { title: `MCP server ${name}` });
  if (!action) return;
  try {
    if (action === 'Sign in') await signIn(manager, name);
    else if (action === 'Sign out') await signOut(secrets, manager, name);
    else if (action === 'Stop') await manager.stop(name);
    else if (action === 'Restart') await manager.restart(name);
    else
      await (status.state === 'crashed' || status.state === 'denied' || status.state === 'failed'
        ? manager.restart(name)
        : manager.start(name));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log(`MCP server ${name}: ${message}`);
    void vscode.window.showErrorMessage(`Keel: MCP server "${name}": ${message.split('\n')[0]}`);
  }
}

/** "Keel: MCP Servers", and "Keel: Sign in to / out of an MCP Server" (a server name, or a pick). */
export function registerMcpServersCommand(
  controller: SessionController,
  log: (m: string) => void,
  secrets: vscode.SecretStorage,
): vscode.Disposable {
  const remoteServer = async (given: unknown, verb: string) => {
    const manager = (controller.current ?? (await controller.ensure())).mcp;
    const remote = (manager?.servers ?? []).filter((s) => s.transport.type !== 'stdio').map((s) => s.name);
    if (!manager || remote.length === 0) {
      void vscode.window.showInformationMessage('Keel: no HTTP MCP servers are configured.');
      return undefined;
    }
    const name =
      typeof given === 'string' && remote.includes(given)
        ? given
        : remote.length === 1
          ? remote[0]
          : await vscode.window.showQuickPick(remote, { title: `Keel: ${verb} an MCP server` });
    return name ? { manager, name } : undefined;
  };
  const report = (name: string, error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    log(`MCP server ${name}: ${message}`);
    void vscode.window.showErrorMessage(`Keel: MCP server "${name}": ${message.split('\n')[0]}`);
  };
  return vscode.Disposable.from(
    vscode.commands.registerCommand('keel.mcpSignIn', async (server?: unknown) => {
      const target = await remoteServer(server, 'Sign in to');
      if (!target) return false;
      try {
        await signIn(target.manager, target.name);
        return true;
      } catch (error) {
        report(target.name, error);
        return false;
      }
    }),
    vscode.commands.registerCommand('keel.mcpSignOut', async (server?: unknown) => {
      const target = await remoteServer(server, 'Sign out of');
      return target ? signOut(secrets, target.manager, target.name) : false;
    }),
    registerServersPick(controller, log, secrets),
  );
}

function registerServersPick(
  controller: SessionController,
  log: (m: string) => void,
  secrets: vscode.SecretStorage,
): vscode.Disposable {
  return vscode.commands.registerCommand('keel.mcpServers', async () => {
    const session = controller.current ?? (await controller.ensure());
    const manager = session.mcp;
    if (!manager) {
      void vscode.window.showInformationMessage(
        'Keel: no MCP servers are configured. Add them to .vscode/mcp.json, .keel/mcp.json or ~/.keel/mcp.json (VS Code mcp.json format); they are read when a chat starts.',
      );
      return;
    }
    const pick = vscode.window.createQuickPick<vscode.QuickPickItem & { server: string }>();
    pick.title = 'Keel: MCP Servers';
    pick.placeholder = 'Select a server to start, stop or restart it';
    const refresh = () => {
      const statuses = manager.status();
      pick.items = statuses.map((s) => serverItem(s));
      // The sign-in state of HTTP servers comes from SecretStorage (async): filled in when read.
      void Promise.all(
        statuses.map(async (s) => {
          const auth = await mcpAuthStatus(secrets, manager, s.name);
          return serverItem(s, auth.remote ? auth.label : undefined);
        }),
      ).then((items) => {
        pick.items = items;
      });
    };
    refresh();
    const sub = manager.onDidChange(refresh);
    pick.onDidAccept(() => {
      const chosen = pick.selectedItems[0];
      pick.hide();
      if (chosen) void act(manager, chosen.server, log, secrets);
    });
    pick.onDidHide(() => {
      sub.dispose();
      pick.dispose();
    });
    pick.show();
  });
}
