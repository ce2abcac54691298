// The environment of a suite's commands (command graders): an allow-list built from nothing, never
// Keel's environment minus a deny-list. Keel's own process holds the API key (the trial's agent talks
// to the model from there); a grader is repository content and gets PATH, locale, a terminal that
// does not page or colour, the trial's own HOME and TMPDIR, which task and trial it grades, and the
// variables the suite declares — which may not look like secrets.

/** Names that look like credentials: a suite may not declare them (it has no business with any). */
const SECRET_NAME =
  /KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|SESSION|COOKIE|PRIVATE|^ANTHROPIC_|^AWS_|^AZURE_|^GOOGLE_|^GCP_|^GCLOUD_|^CLOUDSDK_|^GH_|^GITHUB_|^NPM_|^DOCKER_|^KUBE/i;

/** Set by Keel for every grader: a suite cannot override them. */
const RESERVED = /^(HOME|TMPDIR|KEEL_.*|(HTTPS?|ALL|NO)_PROXY|(https?|all|no)_proxy)$/;

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Problems with an `env` the suite declares, one sentence each ("" prefix: the caller adds where). */
export function declaredEnvProblems(env: Readonly<Record<string, string>> | undefined): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(env ?? {})) {
    if (!NAME.test(name)) problems.push(`env.${name}: not a variable name`);
    else if (SECRET_NAME.test(name))
      problems.push(
        `env.${name}: looks like a secret; a suite's commands never get credentials (declare only non-secret settings)`,
      );
    else if (RESERVED.test(name))
      problems.push(`env.${name}: set by Keel for every grader; a suite cannot set it`);
    else if (value.includes('\0')) problems.push(`env.${name}: contains a NUL byte`);
  }
  return problems;
}

/** Inherited from Keel's environment only by these exact names (never a pattern that could grow). */
const INHERITED = ['PATH', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'LC_MESSAGES', 'TZ'] as const;

export interface GraderEnvOptions {
  /** The trial's own home (the same HOME the trial's agent had). */
  readonly home: string;
  /** Unsandboxed only: the trial's temp folder (the sandbox sets its own TMPDIR). */
  readonly tmpDir: string;
  readonly task: string;
  readonly trial: number;
  /** The suite's declared, already validated, non-secret variables. */
  readonly declared?: Readonly<Record<string, string>>;
}

export function graderEnvironment(
  parent: Readonly<Record<string, string | undefined>>,
  options: GraderEnvOptions,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  // Validated at load; checked again so no path around the loader can smuggle one in.
  for (const [name, value] of Object.entries(options.declared ?? {}))
    if (declaredEnvProblems({ [name]: value }).length === 0) env[name] = value;
  return {
    ...env,
    HOME: options.home,
    TMPDIR: options.tmpDir,
    KEEL_EVAL_TASK: options.task,
    KEEL_EVAL_TRIAL: String(options.trial),
    TERM: 'dumb',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    GIT_TERMINAL_PROMPT: '0',
    NO_COLOR: '1',
  };
}
