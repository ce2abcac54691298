import * as vscode from 'vscode';
import { z } from 'zod';

// Settings are a boundary (users type them into JSON): parse with zod, fall back per field, never
// throw at the user because one value is wrong.

export const APPROVAL_CATEGORIES = [
  'command',
  'network',
  'destructive',
  'delete',
  'protected_write',
] as const;
export type ApprovalCategory = (typeof APPROVAL_CATEGORIES)[number];

const approvalPolicy = z.enum(['ask', 'allow', 'deny']);
export type ApprovalPolicy = z.infer<typeof approvalPolicy>;

const optionalPositiveInt = z.number().int().positive().optional().catch(undefined);

export const settingsSchema = z.object({
  model: z.string().min(1).catch('claude-sonnet-4-6'),
  fallbackModels: z.array(z.string().min(1)).catch([]),
  baseUrl: z
    .string()
    .transform((s) => s.trim())
    .pipe(z.union([z.literal(''), z.url()]))
    .catch(''),
  approvals: z
    .object({
      command: approvalPolicy.catch('ask'),
      network: approvalPolicy.catch('ask'),
      destructive: approvalPolicy.catch('ask'),
      delete: approvalPolicy.catch('ask'),
      protected_write: approvalPolicy.catch('ask'),
    })
    .catch({ command: 'ask', network: 'ask', destructive: 'ask', delete: 'ask', protected_write: 'ask' }),
  editReview: z.enum(['afterApply', 'beforeApply']).catch('afterApply'),
  maxTurns: optionalPositiveInt,
  contextWindow: optionalPositiveInt,
});

export type KeelSettings = z.infer<typeof settingsSchema>;

export function readSettings(): KeelSettings {
  const c = vscode.workspace.getConfiguration('keel');
  const approvals: Record<string, unknown> = {};
  // Setting ids are camelCase (keel.approvals.protectedWrite); the core's kinds are snake_case.
  for (const k of APPROVAL_CATEGORIES)
    approvals[k] = c.get(`approvals.${k.replace(/_(\w)/g, (_, ch: string) => ch.toUpperCase())}`);
  return settingsSchema.parse({
    model: c.get('model'),
    fallbackModels: c.get('fallbackModels'),
    baseUrl: c.get('baseUrl') ?? '',
    approvals,
    editReview: c.get('edits.review'),
    maxTurns: c.get('maxTurns') ?? undefined,
    contextWindow: c.get('contextWindow') ?? undefined,
  });
}
