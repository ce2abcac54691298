import * as path from 'node:path';
import * as vscode from 'vscode';
import type { McpPort } from '../agent/host.ts';
import type { McpManager, McpServerStatus } from '../agent/mcp/manager.ts';
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
        `Keel: start the MCP server "${request.server}" defined by this workspace?`,
        {
          modal: true,
          detail: `${path.basename(path.dirname(request.file))}/${path.basename(request.file)}:\n\n${request.grants.join('\n')}\n\nAn MCP server can run any program with your permissions. Keel remembers your answer for this workspace until the definition changes.`,
        },
        ALLOW,
      );
      return choice === ALLOW;
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

/** One quick-pick row per server: state, tool count, and why it failed. */
export function serverItem(s: McpServerStatus): vscode.QuickPickItem & { server: string } {
  const tools = s.toolCount !== undefined ? ` · ${s.toolCount} tools` : '';
  return {
    server: s.name,
    label: `${ICON[s.state]} ${s.name}`,
    description: `${STATE_LABEL[s.state]}${tools} · ${s.scope === 'workspace' ? 'workspace' : s.scope === 'user' ? 'user' : 'named'}`,
    detail: s.reason ? s.reason.split('\n')[0] : s.commandLine,
  };
}

async function act(manager: McpManager, name: string, log: (m: string) => void): Promise<void> {
  const status = manager.status().find((s) => s.name === name);
  if (!status) return;
  const running = status.state === 'running';
  const actions = running ? ['Restart', 'Stop'] : ['Start'];
  const action = await vscode.window.showQuickPick(actions, { title: `MCP server ${name}` });
  if (!action) return;
  try {
    if (action === 'Stop') await manager.stop(name);
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

/** "Keel: MCP Servers". */
export function registerMcpServersCommand(
  controller: SessionController,
  log: (m: string) => void,
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
      pick.items = manager.status().map(serverItem);
    };
    refresh();
    const sub = manager.onDidChange(refresh);
    pick.onDidAccept(() => {
      const chosen = pick.selectedItems[0];
      pick.hide();
      if (chosen) void act(manager, chosen.server, log);
    });
    pick.onDidHide(() => {
      sub.dispose();
      pick.dispose();
    });
    pick.show();
  });
}
