import * as vscode from 'vscode';
import type { Host } from '../../agent/host.ts';
import type { AnyToolDefinition } from '../../agent/tools/protocol.ts';

// Keel's read-only tools offered to VS Code's other agents (`vscode.lm.registerTool`, declared under
// `languageModelTools` in package.json): Read, Grep, Glob and LS as `keel_read`, `keel_grep`, … Each call
// goes through the same registry as Keel's own (zod validation, the path guard over the open folders,
// the protected-file rules, the audit log under the caller "vscode-lm-tool"), and answers with the
// text Keel's model would read.
//
// Threat: a prompt-injected agent using Keel's tools to read what Keel would not: the guard keeps every
// path inside the open folders (symlinks resolved), protected files ask or refuse exactly as for Keel,
// nothing here writes or runs anything, and every call is audited.

export const OFFERED_TOOLS = ['Read', 'Grep', 'Glob', 'LS'] as const;

/** `Read` → `keel_read`: the names package.json declares. */
export function vscodeToolName(name: string): string {
  return `keel_${name.toLowerCase()}`;
}

async function offeredDefinitions(): Promise<AnyToolDefinition[]> {
  const [{ createReadTool }, { createGrepTool }, { createGlobTool }, { createLsTool }] = await Promise.all([
    import('../../agent/tools/read.ts'),
    import('../../agent/tools/grep.ts'),
    import('../../agent/tools/glob.ts'),
    import('../../agent/tools/ls.ts'),
  ]);
  return [createReadTool(), createGrepTool(), createGlobTool(), createLsTool()] as AnyToolDefinition[];
}

function summary(name: string, input: unknown): string {
  const i = (input ?? {}) as Record<string, unknown>;
  const arg = [i.path, i.pattern].find((v) => typeof v === 'string') as string | undefined;
  return arg ? `Keel ${name}: ${arg.slice(0, 200)}` : `Keel ${name}`;
}

export function registerKeelTools(deps: {
  readonly host: () => Host;
  readonly log: (level: 'info' | 'warn', message: string) => void;
}): vscode.Disposable | undefined {
  if (typeof vscode.lm?.registerTool !== 'function') return undefined;
  let registry: Promise<import('../../agent/tools/registry.ts').ToolRegistry> | undefined;
  const load = () => {
    registry ??= Promise.all([offeredDefinitions(), import('../../agent/tools/registry.ts')]).then(
      ([tools, { createToolRegistry }]) => createToolRegistry(tools),
    );
    return registry;
  };
  const registrations = OFFERED_TOOLS.map((name) =>
    vscode.lm.registerTool<unknown>(vscodeToolName(name), {
      prepareInvocation: (options) => ({ invocationMessage: summary(name, options.input) }),
      async invoke(options, token) {
        const { standaloneToolContext } = await import('../../agent/tools/standalone.ts');
        const controller = new AbortController();
        const cancel = token.onCancellationRequested(() => controller.abort('cancelled'));
        try {
          const context = standaloneToolContext(deps.host(), 'vscode-lm-tool', controller.signal, {
            acceptsImages: false,
          });
          const executed = await (await load()).execute(name, options.input, context);
          deps.log('info', `vscode.lm tool ${vscodeToolName(name)}: ${executed.result.status}`);
          return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(executed.content)]);
        } finally {
          cancel.dispose();
        }
      },
    }),
  );
  return vscode.Disposable.from(...registrations);
}
