import {
  countPassing,
  FEATURE_LIST,
  type Feature,
  type FeatureList,
  INIT_SCRIPT,
  PROGRESS,
} from './featureList.ts';

// The two first messages of a long task: the initializer's brief, and each coding session's
// orientation (where we are, what is next, how it ends). Built by code from files and git.

export function initializerPrompt(spec: string): string {
  return `You are the INITIALIZER of a long task that later sessions will complete one feature at a time.

The task (spec):
${spec.trim()}

Do exactly this, then stop:
1. Write ${FEATURE_LIST}: {"features": [{"id", "category", "description", "steps": [...], "verify", "priority", "passes": false}, ...]}.
   Split the whole spec into small, testable features, most important first; "priority" (optional integer, 1 = first) orders the work when list order is not enough. "verify" is a shell command run from the workspace root that exits 0 only when the feature works end to end (e.g. "npm test -- --grep login", "sh tests/login.sh"). Every "passes" is false.
2. Write ${INIT_SCRIPT}: a POSIX shell script that prepares and starts what the project needs (install, build, start services in the background); it must return.
3. Write ${PROGRESS} with a short note on the plan and the project layout.
Do not implement features. The harness validates the list and makes the first git commit.`;
}

export interface OrientationInput {
  readonly list: FeatureList;
  readonly feature: Feature | undefined;
  readonly progressTail: string;
  readonly gitLog: string;
  readonly initOutput: string;
  /** Features that passed but failed their verify at this session's start, with its output. */
  readonly regressed?: ReadonlyArray<{ id: string; summary: string }>;
  readonly crashed?: { session: string; feature: string | undefined; left: string } | undefined;
}

function tail(text: string, lines: number): string {
  return text.trim().split('\n').slice(-lines).join('\n');
}

export function orientationPrompt(input: OrientationInput): string {
  const { list, feature } = input;
  const passing = countPassing(list);
  const failing = list.features.length - passing;
  const next = feature
    ? [
        `Next failing feature — work on THIS one only: ${feature.id} (${feature.category})`,
        `  ${feature.description}`,
        ...feature.steps.map((s, i) => `  ${i + 1}. ${s}`),
        `  verify: ${feature.verify}`,
      ].join('\n')
    : 'Every feature passes.';
  const crashed = input.crashed
    ? `\n## The previous session did not end\nSession ${input.crashed.session} (feature ${input.crashed.feature ?? 'none'}) crashed or was killed. Its log: .keel/sessions/${input.crashed.session}.jsonl. What it left uncommitted was committed as is:\n${input.crashed.left || '(nothing)'}\nCheck that state first (run the tests) before building on it.\n`
    : '';
  const regressed = input.regressed?.length
    ? `\n## Broken since they passed\nThe harness re-ran the verify of the passing features before this session; these fail now and are failing again:\n${input.regressed.map((r) => `- ${r.id}: ${r.summary.replace(/\n+/g, ' ')}`).join('\n')}\n`
    : '';
  return `You are one session of a long task (keel task). A fresh session follows you; the harness records your work.

## Where we are
Features: ${passing} passing, ${failing} failing, ${list.features.length} total.
${next}
${regressed}${crashed}
## Progress (tail of ${PROGRESS})
${tail(input.progressTail, 30) || '(empty)'}

## git log --oneline -20
${input.gitLog || '(no commits)'}

## ${INIT_SCRIPT} (run by the harness before this session)
${input.initOutput}

## How this session works
- Work on the one feature above. Read what exists first; keep the code clean and working.
- When it works end to end, call FeatureDone {"id":"${feature?.id ?? ''}"}: it runs the verify command and marks the feature passing only if it exits 0. If it fails, fix the code and call it again. FeatureDone accepts this feature only; the others are for later sessions.
- ${FEATURE_LIST} is not yours to edit: any change to it other than through FeatureDone is refused, and reverted at the end of the session.
- Do not commit; the harness commits and appends to ${PROGRESS} when you stop.
- End with a short message: what you did, and what is left for the next session.`;
}
