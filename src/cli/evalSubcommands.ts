// `keel eval merge REPORT…` and `keel eval calibrate SET.json`: eval subcommands named by the first
// positional (a suite directory named "merge" or "calibrate" is still reachable as ./merge). Kept out
// of args.ts so that file only asks here: the raw fields to validate with evalSchema, or a usage error.

type Values = Record<string, string | boolean | undefined>;

const flagsBut = (v: Values, allowed: readonly string[]) =>
  Object.keys(v).filter((k) => v[k] !== undefined && !allowed.includes(k));

export function evalSubcommand(
  positionals: readonly string[],
  v: Values,
): { fields: Record<string, unknown> } | { usage: string } | undefined {
  if (positionals[0] === 'calibrate') {
    // The judge against hand-labelled trials (eval/calibrate.ts).
    if (flagsBut(v, ['json', 'model']).length > 0 || positionals.length !== 2)
      return { usage: 'keel eval calibrate takes one SET.json and only --model and --json' };
    const fields = { suite: 'calibrate', calibrate: positionals[1], model: v.model, json: v.json };
    return { fields: { command: 'eval', emulator: false, ...fields } };
  }
  if (positionals[0] === 'merge') {
    // The shards' reports as one run's (eval/merge.ts).
    const extra = flagsBut(v, ['json', 'html']);
    if (extra.length > 0)
      return { usage: `keel eval merge takes only --json and --html, not --${extra.join(', --')}` };
    if (positionals.length < 2)
      return { usage: 'keel eval merge takes the REPORT.json files of the shards (one or more)' };
    const fields = { suite: 'merge', merge: positionals.slice(1), json: v.json, html: v.html };
    return { fields: { command: 'eval', emulator: false, ...fields } };
  }
  if (v['from-feedback'] === true && (positionals.length !== 1 || v['from-session'] !== undefined))
    return { usage: 'keel eval --from-feedback takes one OUT-DIR (the suite to write the draft tasks into)' };
  return undefined;
}
