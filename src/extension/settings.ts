import * as vscode from 'vscode';
import { parseDisabledSources, type RuleSourceName } from '../agent/projectRules/sources.ts';
import { DEFAULT_EFFORT, type Effort, isEffort } from '../agent/model/models.ts';
import { kindModels, modelSetting } from './modelSettings.ts';

// Settings are a boundary (users type them into JSON): validate per field, fall back per field,
// never throw at the user because one value is wrong. Plain checks, not zod: this module loads at
// activation, and zod alone costs more than the rest of activation together.

export const APPROVAL_CATEGORIES = [
  'command',
  'network',
  'destructive',
  'delete',
  'protected_write',
] as const;
export type ApprovalCategory = (typeof APPROVAL_CATEGORIES)[number];

/** `auto` (commands only): decided by effect class (safety/autoMode.ts); what remains is asked. */
export type ApprovalPolicy = 'ask' | 'allow' | 'deny' | 'auto';

export interface KeelSettings {
  readonly model: string;
  /** Thinking level for models that think; 'off' sends no thinking. */
  readonly effort: Effort | 'off';
  readonly fallbackModels: string[];
  /** '' = the official endpoint. */
  readonly baseUrl: string;
  readonly approvals: Record<ApprovalCategory, ApprovalPolicy>;
  readonly editReview: 'afterApply' | 'beforeApply';
  readonly maxTurns?: number | undefined;
  readonly contextWindow?: number | undefined;
  /** The OS sandbox for commands (machine-scoped: a workspace cannot turn it off). */
  readonly sandbox: {
    enabled: boolean;
    failIfUnavailable: boolean;
    denyRead?: string[] | undefined;
    /** Added to the built-in allow-list of the network proxy. */
    allowedDomains?: string[] | undefined;
  };
  /** Disk budget for per-prompt checkpoints; older sessions' checkpoints are pruned past it. */
  readonly checkpointBudgetMB?: number | undefined;
  /** Rules-file sources Keel does not read (`keel.rules.disabled`); unknown names are dropped. */
  readonly rulesDisabled: RuleSourceName[];
  /** A model per sub-agent kind (`explore`, `general`, `writer`, an agent's name), e.g. a cheaper one. */
  readonly subagentModels: Record<string, string>;
  /** A workspace's `keel.model` that named another provider than the user's own, so was not used. */
  readonly modelRefused?: string | undefined;
}

const DEFAULT_MODEL = 'claude-sonnet-4-6';

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
const policy = (v: unknown): ApprovalPolicy =>
  v === 'allow' || v === 'deny' || v === 'ask' || v === 'auto' ? v : 'ask';
const positiveInt = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;

/** '' or an absolute http(s) URL (trimmed); anything else falls back to ''. */
function url(v: unknown): string {
  if (typeof v !== 'string') return '';
  const s = v.trim();
  if (s === '') return '';
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:' ? s : '';
  } catch {
    return '';
  }
}

/** Raw values (as read from VS Code's configuration) → settings; each bad field gets its default. */
export function parseSettings(raw: {
  model?: unknown;
  effort?: unknown;
  fallbackModels?: unknown;
  baseUrl?: unknown;
  approvals?: Partial<Record<ApprovalCategory, unknown>>;
  editReview?: unknown;
  maxTurns?: unknown;
  contextWindow?: unknown;
  sandbox?: { enabled?: unknown; failIfUnavailable?: unknown; denyRead?: unknown; allowedDomains?: unknown };
  checkpointBudgetMB?: unknown;
  rulesDisabled?: unknown;
  subagentModels?: unknown;
}): KeelSettings {
  const approvals = {} as Record<ApprovalCategory, ApprovalPolicy>;
  for (const k of APPROVAL_CATEGORIES) approvals[k] = policy(raw.approvals?.[k]);
  return {
    model: nonEmpty(raw.model) ? raw.model : DEFAULT_MODEL,
    effort: raw.effort === 'off' || isEffort(raw.effort) ? raw.effort : DEFAULT_EFFORT,
    fallbackModels:
      Array.isArray(raw.fallbackModels) && raw.fallbackModels.every(nonEmpty) ? [...raw.fallbackModels] : [],
    baseUrl: url(raw.baseUrl),
    approvals,
    editReview: raw.editReview === 'beforeApply' ? 'beforeApply' : 'afterApply',
    maxTurns: positiveInt(raw.maxTurns),
    contextWindow: positiveInt(raw.contextWindow),
    sandbox: {
      enabled: raw.sandbox?.enabled !== false,
      failIfUnavailable: raw.sandbox?.failIfUnavailable === true,
      denyRead:
        Array.isArray(raw.sandbox?.denyRead) && raw.sandbox.denyRead.every(nonEmpty)
          ? [...raw.sandbox.denyRead]
          : undefined,
      allowedDomains:
        Array.isArray(raw.sandbox?.allowedDomains) && raw.sandbox.allowedDomains.every(nonEmpty)
          ? [...raw.sandbox.allowedDomains]
          : undefined,
    },
    checkpointBudgetMB: positiveInt(raw.checkpointBudgetMB),
    rulesDisabled: parseDisabledSources(raw.rulesDisabled).disabled,
    subagentModels: kindModels(raw.subagentModels),
  };
}

/**
 * A machine-scoped setting (package.json `"scope": "machine"`): user or remote settings only. VS Code
 * already ignores workspace values of such settings; read only the user layer anyway, so a
 * workspace can never auto-allow commands or redirect the API key, whatever the host does.
 */
function userValue(c: vscode.WorkspaceConfiguration, key: string): unknown {
  const inspected = c.inspect(key);
  return inspected ? (inspected.globalValue ?? inspected.defaultValue) : undefined;
}

/**
 * `keel.approvals.classifierModel` (machine scope, the user layer only): the auto mode's classifier
 * model; undefined (empty, not a string) means the chat's model. A workspace cannot pick the model
 * that decides what runs without a question.
 */
export function readClassifierModel(): string | undefined {
  const v = userValue(vscode.workspace.getConfiguration('keel'), 'approvals.classifierModel');
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

export function readSettings(): KeelSettings {
  const c = vscode.workspace.getConfiguration('keel');
  const approvals: Partial<Record<ApprovalCategory, unknown>> = {};
  // Setting ids are camelCase (keel.approvals.protectedWrite); the core's kinds are snake_case.
  for (const k of APPROVAL_CATEGORIES)
    approvals[k] = userValue(c, `approvals.${k.replace(/_(\w)/g, (_, ch: string) => ch.toUpperCase())}`);
  const model = modelSetting(c.inspect('model') ?? {});
  const parsed = parseSettings({
    model: model.model,
    effort: c.get('effort'),
    fallbackModels: c.get('fallbackModels'),
    baseUrl: userValue(c, 'baseUrl') ?? '',
    approvals,
    editReview: c.get('edits.review'),
    maxTurns: c.get('maxTurns') ?? undefined,
    contextWindow: c.get('contextWindow') ?? undefined,
    sandbox: {
      enabled: userValue(c, 'sandbox.enabled'),
      failIfUnavailable: userValue(c, 'sandbox.failIfUnavailable'),
      denyRead: userValue(c, 'sandbox.denyRead'),
      allowedDomains: userValue(c, 'sandbox.allowedDomains'),
    },
    checkpointBudgetMB: c.get('checkpoints.budgetMB') ?? undefined,
    // Turning a source off only takes text away, so a workspace may set it too.
    rulesDisabled: c.get('rules.disabled'),
    // Which vendor a sub-agent's work goes to is the user's choice, never a workspace's.
    subagentModels: userValue(c, 'subagentModels'),
  });
  return model.refused ? { ...parsed, modelRefused: model.refused } : parsed;
}
