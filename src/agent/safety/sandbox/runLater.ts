import * as path from 'node:path';
import type { SandboxDenial } from '../../host.ts';
import { emptyGitPlan, type GitPlan, planRepositories, settleGit } from './gitDirs.ts';
import { type PinState, planPin, settlePins } from './pins.ts';
import { SHELL_STARTUP_FILES } from './settings.ts';

// The rule: a sandboxed command must not leave behind anything that runs, or is trusted, later on the
// host — the configuration and hooks that host tools (git, package managers, editors, other agents,
// Keel itself) read from the tree and act on without the user deliberately running project code.
// Each entry below is pinned in every workspace root (see pins.ts for how); git's part is in
// gitDirs.ts (GIT_RUN_LATER), applied to the root's repository and to repositories one folder down
// (where VS Code's git extension also looks, git.repositoryScanMaxDepth = 1).
//
// Deliberately NOT in the set — project text or project code, which commands exist to change, shown
// in the diff, and run only when the user runs the project:
// - AGENTS.md, CLAUDE.md, `.agents/` (skills): project text for the model, labelled as the
//   repository's; it grants nothing (what would grant something goes through src/agent/trust/);
// - `keel-task/` (init.sh, feature list, progress): a long task's own files; init.sh only ever runs
//   through the command sandbox and policy, never on the host (the feature list has its own guard);
// - package.json scripts, Makefiles, build.rs, source; `.env` (read by the project's own code);
//   `.github/` workflows (run on GitHub after a push the user makes);
// - committed hook-runner config (`.husky/`, `.pre-commit-config.yaml`, lefthook.yml): project code the
//   user opted into; the `.git/hooks` that call them are pinned;
// - installed dependencies (node_modules, .venv, target/): editor extensions load some of them
//   (ESLint, Prettier, an interpreter); installing them is the point of many commands.

export interface RunLaterEntry {
  /** Relative to a workspace root, '/'-separated; `*` in the last part is a pattern. */
  readonly path: string;
  /** Who acts on it, and how. */
  readonly why: string;
}

export const RUN_LATER: readonly RunLaterEntry[] = [
  // Editors
  {
    path: '.vscode',
    why: 'VS Code acts on it: settings.json (terminal env, tool and interpreter paths extensions run), tasks.json (runOn: folderOpen), launch.json, mcp.json (servers VS Code and Keel start)',
  },
  {
    path: '*.code-workspace',
    why: 'a VS Code workspace file: settings, tasks and launch configs like .vscode/',
  },
  {
    path: '.devcontainer',
    why: 'Dev Containers: initializeCommand runs on the host, the others in the container',
  },
  { path: '.devcontainer.json', why: 'Dev Containers: initializeCommand runs on the host' },
  { path: '.idea', why: 'JetBrains IDEs: run configurations and startup tasks' },
  { path: '.zed', why: 'Zed: settings naming language-server binaries, tasks' },
  { path: '.helix', why: 'Helix: languages.toml names language-server commands' },
  { path: '.exrc', why: "Vim's exrc: sourced when Vim starts in the folder" },
  { path: '.nvimrc', why: "Neovim's exrc: sourced when Neovim starts in the folder" },
  { path: '.nvim.lua', why: "Neovim's exrc: run when Neovim starts in the folder" },
  // Other coding agents
  { path: '.claude/settings.json', why: 'Claude Code: hooks run shell commands; permission allow-rules' },
  {
    path: '.claude/settings.local.json',
    why: 'Claude Code: hooks run shell commands; permission allow-rules',
  },
  { path: '.mcp.json', why: 'project MCP servers (programs MCP clients start)' },
  { path: '.cursor/mcp.json', why: 'Cursor: MCP servers it starts' },
  { path: '.gemini/settings.json', why: 'Gemini CLI: MCP servers and tool settings' },
  // Package managers and toolchains
  {
    path: '.npmrc',
    why: "npm/pnpm/yarn 1 read it on every run: script-shell, node-options, git=, registry (Keel's network allow-list reads registry= too)",
  },
  { path: '.yarnrc', why: 'yarn 1: yarn-path runs that JavaScript for every yarn command; registry' },
  {
    path: '.yarnrc.yml',
    why: "yarn 2+: yarnPath (runs that JavaScript), plugins, npmRegistryServer (Keel's network allow-list)",
  },
  { path: '.yarn/releases', why: 'the yarn release yarnPath points at, run by every yarn command' },
  { path: '.yarn/plugins', why: 'yarn plugins, loaded by every yarn command' },
  {
    path: '.pnpmfile.cjs',
    why: 'pnpm hooks (readPackage…), run on every install, even with --ignore-scripts',
  },
  {
    path: 'pnpm-workspace.yaml',
    why: 'pnpm 10 settings: onlyBuiltDependencies and friends decide which packages run install scripts',
  },
  { path: 'bunfig.toml', why: 'Bun: preload scripts for bun run/test, registry' },
  { path: '.bunfig.toml', why: 'Bun: preload scripts for bun run/test, registry' },
  { path: '.bundle/config', why: 'Bundler: gem sources, install paths, build flags' },
  { path: '.venv/pip.conf', why: 'pip in that virtualenv: index-url, trusted-host' },
  { path: 'venv/pip.conf', why: 'pip in that virtualenv: index-url, trusted-host' },
  { path: 'uv.toml', why: 'uv: index URLs, Python downloads' },
  {
    path: '.cargo/config.toml',
    why: 'Cargo (and rust-analyzer, which runs it when the folder opens): rustc-wrapper, runner, [env], source replacement',
  },
  { path: '.cargo/config', why: 'Cargo: the older name of .cargo/config.toml' },
  {
    path: 'rust-toolchain.toml',
    why: 'rustup: the toolchain for every cargo/rustc call, a custom path included',
  },
  { path: 'rust-toolchain', why: 'rustup: the toolchain for every cargo/rustc call' },
  {
    path: 'gradle/wrapper',
    why: 'the Gradle wrapper: distributionUrl is downloaded and run (IDEs import Gradle projects on open)',
  },
  { path: 'gradle.properties', why: 'Gradle: org.gradle.jvmargs (a -javaagent) for every build' },
  { path: '.mvn', why: 'Maven: jvm.config, maven.config, extensions.xml (loaded extensions), the wrapper' },
  // Environment managers (act on cd)
  { path: '.envrc', why: 'direnv: sourced on cd once allowed' },
  { path: '.tool-versions', why: 'asdf/mise: the tool versions (and plugins) used in the folder' },
  { path: '.mise.toml', why: 'mise: [env], hooks and tasks, acted on on cd' },
  { path: 'mise.toml', why: 'mise: [env], hooks and tasks, acted on on cd' },
  { path: '.mise.local.toml', why: 'mise: [env], hooks and tasks, acted on on cd' },
  { path: 'mise.local.toml', why: 'mise: [env], hooks and tasks, acted on on cd' },
  { path: '.mise', why: 'mise: config and tasks' },
  { path: '.config/mise.toml', why: 'mise: [env], hooks and tasks' },
  { path: '.config/mise', why: 'mise: config and tasks' },
  // Keel
  { path: '.keel', why: "Keel's state: approvals, network allowances, session logs and checkpoints" },
  // Shell start-up files: only run when a root is a home folder, but nothing else writes them.
  ...SHELL_STARTUP_FILES.map((name) => ({ path: name, why: 'a shell runs it at start-up' })),
];

export interface TreePlan {
  readonly pins: PinState;
  readonly git: GitPlan;
}

/**
 * The run-later set for one command: bwrap arguments into `args` (after the writable binds), and
 * what to check afterwards. `extra` are absolute paths outside the table (Keel's own home, when it
 * lies inside a root) pinned the same way.
 */
export function planRunLater(
  roots: readonly string[],
  options: {
    readonly bind: (dir: string) => void;
    readonly extra?: readonly { readonly path: string; readonly why: string; readonly base: string }[];
  },
  args: string[],
): TreePlan {
  const plan: TreePlan = { pins: { snapshots: [] }, git: emptyGitPlan() };
  for (const root of roots) {
    planRepositories(root, options.bind, args, plan.pins, plan.git);
    for (const entry of RUN_LATER)
      planPin(
        { path: path.join(root, ...entry.path.split('/')), why: entry.why, base: root },
        args,
        plan.pins,
      );
  }
  for (const pin of options.extra ?? []) planPin(pin, args, plan.pins);
  return plan;
}

/** After the command, and every few seconds while a long one runs. */
export function settleRunLater(plan: TreePlan, writable: (p: string) => boolean): SandboxDenial[] {
  return [...settleGit(plan.git, writable), ...settlePins(plan.pins, writable)];
}
