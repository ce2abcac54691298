import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rgPath } from '@vscode/ripgrep';
import type { ApprovalsPort, Host, McpPort } from '../agent/host.ts';
import { createNodeHost } from '../agent/node/nodeHost.ts';
import { parseDisabledSources, RULE_SOURCES, type RuleSourceName } from '../agent/projectRules/sources.ts';
import { createPolicyApprovals } from '../agent/safety/approvals.ts';
import { type RunArgs, UsageError } from './args.ts';
import { type SandboxFlag, sandboxSettings } from './sandboxCli.ts';
import { createTtyApprovals } from './ttyApprovals.ts';

// What the CLI's commands build a host and a session from: the workspace folder, who answers
// approval requests, the bundled skills, and the settings that come from the environment.

/** dist/cli.mjs sits one level below the repository (or package) root that holds skills/. */
export function bundledSkillsDir(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return [path.join(here, '..', 'skills'), path.join(here, '..', '..', 'skills')].find((d) =>
    fs.existsSync(d),
  );
}

/**
 * `--approve auto`'s classifier model: `--classifier-model`, else KEEL_CLASSIFIER_MODEL, else none
 * (the session's model). Checked as --model is, before anything starts. Without auto: undefined
 * (the flag is a usage error there; the variable is not read).
 */
export async function classifierModelFor(args: {
  readonly approve?: RunArgs['approve'];
  readonly classifierModel?: string | undefined;
}): Promise<string | undefined> {
  if (args.approve !== 'auto') return undefined;
  const fromEnv = process.env.KEEL_CLASSIFIER_MODEL?.trim();
  const spec = args.classifierModel ?? (fromEnv || undefined);
  if (spec === undefined) return undefined;
  const { checkModelSpec } = await import('./modelChoice.ts');
  checkModelSpec(spec, args.classifierModel !== undefined ? '--classifier-model' : 'KEEL_CLASSIFIER_MODEL');
  return spec;
}

export function approvalsFor(policy: RunArgs['approve'], classifierModel?: string): ApprovalsPort {
  // auto: routine commands run, never-class ones are refused, the classifier decides the rest;
  // what it escalates is asked on a terminal (refused without one).
  if (policy === 'auto')
    return {
      ...(process.stdin.isTTY
        ? createTtyApprovals()
        : createPolicyApprovals(
            'never',
            '--approve auto runs routine commands and refuses never-class ones; what it and its classifier leave to a person is refused because keel has no terminal to ask on (stdin is not a TTY)',
          )),
      auto: true,
      ...(classifierModel ? { classifierModel } : {}),
    };
  if (policy) return createPolicyApprovals(policy);
  if (process.stdin.isTTY) return createTtyApprovals();
  // Said to the model and printed with the refusal: the user was never asked, and this is how to allow.
  return createPolicyApprovals(
    'never',
    'keel has no terminal to ask on (stdin is not a TTY), so every approval request is refused; run it on a terminal to be asked, or pass --approve all to allow what asks (the never-run list stays blocked)',
  );
}

export function workspaceDir(dir: string | undefined): string {
  const resolved = path.resolve(dir ?? process.cwd());
  if (!fs.existsSync(resolved) || !fs.statSync(resolved).isDirectory())
    throw new UsageError(`Workspace is not a directory: ${resolved}`);
  return resolved;
}

/** KEEL_CHECKPOINT_BUDGET_MB caps the disk use of per-prompt checkpoints (default 512 MB). */
export function checkpointBudget(): { checkpoints?: { budgetBytes: number } } {
  const mb = Number(process.env.KEEL_CHECKPOINT_BUDGET_MB);
  return Number.isFinite(mb) && mb > 0 ? { checkpoints: { budgetBytes: mb * 1024 * 1024 } } : {};
}

/**
 * KEEL_RULES_DISABLED=claude,cursor: rules-file sources not read (the CLI's `keel.rules.disabled`).
 * An unknown name is a warning, not an error: a typo must not stop a CI run.
 */
export function rulesSettings(): { rulesDisabled?: RuleSourceName[] } {
  const raw = process.env.KEEL_RULES_DISABLED;
  if (!raw) return {};
  const { disabled, unknown } = parseDisabledSources(raw);
  if (unknown.length > 0) {
    process.stderr.write(
      `keel: warning: KEEL_RULES_DISABLED names unknown sources (${unknown.join(', ')}); known: ${RULE_SOURCES.join(', ')}\n`,
    );
  }
  return { rulesDisabled: disabled };
}

export function makeHost(
  workspace: string,
  approvals: ApprovalsPort,
  sandbox?: SandboxFlag,
  mcp?: McpPort,
  allowDomains: readonly string[] = [],
  extraRoots: readonly string[] = [],
): Host {
  const host = createNodeHost({
    workspace,
    extraRoots,
    approvals,
    // KEEL_RIPGREP_PATH: another ripgrep (a system one), or '' for none (Grep's plain scan answers).
    ripgrepPath: process.env.KEEL_RIPGREP_PATH ?? rgPath,
    sandbox: sandboxSettings(sandbox, process.env, allowDomains),
  });
  return mcp ? { ...host, mcp } : host;
}

/**
 * `--add-dir DIR`: each an existing folder, canonical, not the workspace again, not `/` or the home
 * folder itself (that would make every file a workspace file), listed once. The user names these; a
 * repository cannot add one.
 */
export function addedRoots(workspace: string, given: readonly string[]): string[] {
  const first = fs.realpathSync(workspace);
  const out: string[] = [];
  for (const dir of given) {
    let real: string;
    try {
      real = fs.realpathSync(path.resolve(dir));
    } catch {
      throw new UsageError(`--add-dir ${dir}: no such folder`);
    }
    if (!fs.statSync(real).isDirectory()) throw new UsageError(`--add-dir ${dir}: not a folder`);
    if (real === path.parse(real).root || real === fs.realpathSync(os.homedir()))
      throw new UsageError(
        `--add-dir ${dir}: refusing ${real} as a workspace folder (name a project folder)`,
      );
    if (real === first || out.includes(real))
      throw new UsageError(`--add-dir ${dir}: already a workspace folder`);
    out.push(real);
  }
  return out;
}
