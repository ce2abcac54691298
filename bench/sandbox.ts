import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { createNodeShell } from '../src/agent/node/nodeShell.ts';
import { createSandbox } from '../src/agent/safety/sandbox/sandbox.ts';

// Per-command cost of the OS sandbox: the same commands through the same NodeShell, plain and inside
// the session's sandbox (bubblewrap + seccomp, deny list, git pins), interleaved so load drifts hit
// both sides alike. Also a bare `bwrap --ro-bind / / true` for reference. Goal: ≤ 15 ms added.

export interface SandboxBenchRow {
  readonly command: string;
  readonly plainMedianMs: number;
  readonly sandboxedMedianMs: number;
  readonly addedMs: number;
  readonly ratio: number;
  /** The same sandbox without the domain proxy (its own empty network namespace per command). */
  readonly noProxyMedianMs: number;
  /** What joining the session's proxied namespace (nsenter) costs over that. */
  readonly proxyAddedMs: number;
}

const GOAL_ADDED_MS = 15;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const round = (n: number) => Math.round(n * 100) / 100;

export async function runSandboxBench(runs = 25): Promise<unknown> {
  const workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-sbx-')));
  fs.writeFileSync(path.join(workspace, 'a.txt'), 'x\n');
  execFileSync('git', ['init', '-q'], { cwd: workspace });
  execFileSync('git', ['add', '.'], { cwd: workspace });
  const sandbox = createSandbox({ roots: [workspace] });
  if (sandbox.status.tier !== 'bwrap') {
    sandbox.dispose();
    return { skipped: `no sandbox here: ${sandbox.status.summary}` };
  }
  const noProxySandbox = createSandbox({ roots: [workspace], settings: { networkProxy: false } });
  const plain = createNodeShell();
  const boxed = createNodeShell({ sandbox });
  const noProxy = createNodeShell({ sandbox: noProxySandbox });
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.homedir() };
  const time = async (shell: typeof plain, command: string) => {
    const started = process.hrtime.bigint();
    const result = await shell.run({ command, cwd: workspace, env, timeoutMs: 30_000 });
    if (result.exitCode !== 0) throw new Error(`${command} failed: ${result.stderr}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  const rows: SandboxBenchRow[] = [];
  for (const command of ['true', 'git status', 'node -e 0']) {
    const a: number[] = [];
    const b: number[] = [];
    const c: number[] = [];
    for (let i = 0; i < 3; i++) {
      await time(plain, command);
      await time(boxed, command);
      await time(noProxy, command);
    }
    for (let i = 0; i < runs; i++) {
      a.push(await time(plain, command));
      b.push(await time(boxed, command));
      c.push(await time(noProxy, command));
    }
    const plainMs = median(a);
    const boxedMs = median(b);
    const noProxyMs = median(c);
    rows.push({
      command,
      plainMedianMs: round(plainMs),
      sandboxedMedianMs: round(boxedMs),
      addedMs: round(boxedMs - plainMs),
      ratio: round(boxedMs / plainMs),
      noProxyMedianMs: round(noProxyMs),
      proxyAddedMs: round(boxedMs - noProxyMs),
    });
  }
  // Reference: bwrap's own cost with no policy at all, through the same shell.
  const bareA: number[] = [];
  const bareB: number[] = [];
  const bwrap = sandbox.status.bwrap as string;
  for (let i = 0; i < runs; i++) {
    bareA.push(await time(plain, 'true'));
    bareB.push(
      await time(plain, `${bwrap} --ro-bind / / --unshare-user --unshare-pid --unshare-net -- true`),
    );
  }
  sandbox.dispose();
  noProxySandbox.dispose();
  fs.rmSync(workspace, { recursive: true, force: true });
  const worst = Math.max(...rows.map((r) => r.addedMs));
  return {
    runs,
    rows,
    bareBwrapAddedMs: round(median(bareB) - median(bareA)),
    networkProxy: sandbox.network.proxy
      ? 'on (session namespace + domain proxy)'
      : `off: ${sandbox.network.reason}`,
    goalAddedMs: GOAL_ADDED_MS,
    worstAddedMs: worst,
    pass: worst <= GOAL_ADDED_MS,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await runSandboxBench(), null, 2));
}
