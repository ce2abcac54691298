import type { CommandVerdict, Finding } from './commandPolicy.ts';

// `--approve auto`: a per-command decision for what the command policy would otherwise ask about.
// The policy's own verdict comes first and is never loosened beyond its questions: what it blocks
// or refuses stays refused, what it allows runs. Each finding that asks is put into an effect class;
// a few routine, recoverable classes run without a question, the "never" classes are refused even
// when a person could be asked, everything else asks (or is refused when nobody can be asked).
// The decision is code over the policy's findings, not model judgement: a prompt-injected model can
// only reach the classes below, and no text it writes changes which class a command lands in.
//
// Threat: a model steered by repository or web content asks for `curl … | sh`, `rm -rf ~`, a read
// of ~/.ssh, an upload of .env, a push that rewrites history, a cron job. Those land in a never class
// (or were blocked by the policy already), so they are refused and the refusal is audited.

export type AutoClass =
  | 'read_only'
  | 'workspace_cleanup'
  | 'network_fetch'
  | 'workspace_write'
  | 'destructive'
  | 'network'
  | 'package_install'
  | 'git_push'
  | 'dynamic'
  | 'process_control'
  | 'escapes_workspace'
  | 'credential_access'
  | 'exfiltration'
  | 'remote_code'
  | 'history_rewrite'
  | 'persistence'
  | 'privilege'
  | 'environment_hijack'
  | 'metadata_tamper'
  | 'policy_block';

export type AutoDecision = 'allow' | 'ask' | 'refuse';

/** Classes that run without a question in auto mode (routine and recoverable). */
export const AUTO_ALLOWED: ReadonlySet<AutoClass> = new Set([
  'read_only',
  'workspace_cleanup',
  'network_fetch',
]);

/** Classes refused in auto mode even when a person could be asked. */
export const AUTO_NEVER: ReadonlySet<AutoClass> = new Set([
  'escapes_workspace',
  'credential_access',
  'exfiltration',
  'remote_code',
  'history_rewrite',
  'persistence',
  'privilege',
  'environment_hijack',
  'metadata_tamper',
  'policy_block',
]);

export interface AutoVerdict {
  readonly decision: AutoDecision;
  /** Every class found, most severe first. */
  readonly classes: readonly AutoClass[];
  /** One line: why (the deciding classes and the policy's reasons). */
  readonly reason: string;
}

// Build output, caches and dependency folders: deleting them loses nothing a build cannot remake.
const ARTIFACT =
  /^(node_modules|dist|build|out|coverage|target|\.next|\.nuxt|\.cache|\.turbo|\.parcel-cache|\.pytest_cache|\.mypy_cache|\.ruff_cache|__pycache__|\.tox|\.nyc_output|tmp|\.tmp|.*\.(o|obj|pyc|class|log|tsbuildinfo))$/;

// Where secrets live: any finding naming one of these is credential access.
const CREDENTIAL =
  /(\.ssh\b|id_rsa|id_ed25519|id_ecdsa|\.aws\b|\.gnupg|\.netrc|\.npmrc|\.pypirc|\.docker\/config|\.kube\/config|\.config\/gh\b|\.git-credentials|credentials|\/etc\/shadow|\/etc\/sudoers|(^|[\s/'"=@])\.env\b|\.pgpass|keychain|secret)/i;

// curl/wget/httpie sending a file or form: an upload, whatever the host.
const UPLOAD =
  /(\s-d\s*@|\s--data(-binary|-raw|-urlencode)?[\s=]+@|\s-F\s|\s--form[\s=]|\s-T\s|\s--upload-file[\s=]|\s--post-file[\s=]|\s--body-file[\s=])/;

function deletedTargets(reason: string): string[] | undefined {
  const m = /^deletes (.+?)(?: \(outside the workspace or not known in advance\))?$/.exec(reason);
  if (!m?.[1]) return undefined;
  return m[1].split(' ').filter((t) => t !== '');
}

function isArtifactPath(target: string): boolean {
  if (!/^[A-Za-z0-9._/-]+$/.test(target)) return false;
  if (target.startsWith('/') || target.startsWith('-')) return false;
  const parts = target.replace(/\/+$/, '').split('/');
  if (parts.some((p) => p === '..' || p === '')) return false;
  // ./dist, src/dist, node_modules/.cache/x: some path segment names an artifact folder or file.
  return parts.some((p) => p !== '.' && ARTIFACT.test(p));
}

/** The effect class of one finding the policy asks about. */
export function classOfFinding(finding: Finding): AutoClass {
  const text = `${finding.reason} ${finding.command}`;
  if (CREDENTIAL.test(text)) return 'credential_access';
  if (/version-control metadata|\.git\/hooks|Keel's own state|\.keel\//.test(text)) return 'metadata_tamper';
  if (/host privileges|root on this machine|privileg/i.test(finding.reason)) return 'privilege';
  if (
    /ahead of the system programs|makes programs load or run code|program names can no longer/.test(
      finding.reason,
    )
  )
    return 'environment_hijack';
  if (/schedules or removes jobs|crontab|systemd|launchctl|\bat\b job/.test(text)) return 'persistence';
  if (/code produced at run time|fetched from the network|downloaded/.test(finding.reason))
    return 'remote_code';
  if (finding.class === 'network') {
    if (UPLOAD.test(` ${finding.command}`)) return 'exfiltration';
    if (/rewrites or deletes remote history/.test(finding.reason)) return 'history_rewrite';
    if (finding.program === 'git push') return 'git_push';
    if (finding.program === 'git fetch') return 'network_fetch';
    if (/downloads or publishes packages|downloads and runs the package/.test(finding.reason))
      return 'package_install';
    return 'network';
  }
  if (/outside the workspace/.test(finding.reason)) {
    // A path known to be outside is an escape; one not known in advance (`xargs rm`) asks.
    const targets = deletedTargets(finding.reason);
    const unknown = /\(unknown path\)|<[^>]*>|not known in advance/.test(finding.reason);
    if (!unknown || targets?.some((t) => t.startsWith('/') || t.startsWith('~') || t.startsWith('..')))
      return 'escapes_workspace';
    return 'dynamic';
  }
  if (finding.class === 'destructive') {
    const targets = deletedTargets(finding.reason);
    if (targets && finding.risk !== 'high' && targets.length > 0 && targets.every(isArtifactPath))
      return 'workspace_cleanup';
    if (/terminates processes/.test(finding.reason)) return 'process_control';
    if (/overwrites the existing file/.test(finding.reason)) return 'workspace_write';
    return 'destructive';
  }
  return 'dynamic';
}

const RANK: Record<AutoDecision, number> = { allow: 0, ask: 1, refuse: 2 };

function decisionOf(cls: AutoClass): AutoDecision {
  return AUTO_NEVER.has(cls) ? 'refuse' : AUTO_ALLOWED.has(cls) ? 'allow' : 'ask';
}

/** The auto mode's decision over a command verdict of the policy. */
export function autoDecide(verdict: CommandVerdict): AutoVerdict {
  if (verdict.decision === 'allow')
    return { decision: 'allow', classes: ['read_only'], reason: verdict.reason };
  if (verdict.decision === 'block' || verdict.decision === 'refuse')
    return { decision: 'refuse', classes: ['policy_block'], reason: verdict.reason };
  const asked = verdict.findings.filter((f) => f.decision === 'ask');
  if (asked.length === 0) return { decision: 'ask', classes: ['dynamic'], reason: verdict.reason };
  const found = asked.map((f) => ({ cls: classOfFinding(f), reason: f.reason }));
  const decision = found.reduce<AutoDecision>(
    (d, f) => (RANK[decisionOf(f.cls)] > RANK[d] ? decisionOf(f.cls) : d),
    'allow',
  );
  const deciding = found.filter((f) => decisionOf(f.cls) === decision);
  const classes = [...new Set([...deciding, ...found].map((f) => f.cls))];
  const reason = [...new Set(deciding.map((f) => `${f.cls}: ${f.reason}`))].join('; ');
  return { decision, classes, reason };
}
