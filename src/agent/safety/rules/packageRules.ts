// Package managers: installs, publishes and downloads reach the network (approval); their config
// and script changes are judged as writes; `npx <tool>` runs the workspace's copy of a known tool.

import * as path from 'node:path';
import { type Arg, parseOpts, type RuleContext, words } from './commandTypes.ts';
import { judgePackageConfig } from './hostRules.ts';
import { lit, network, type Recurse, type Rule, safe } from './programRules.ts';
import { judgePackageScript, scriptName } from './scriptRules.ts';

const PM_NETWORK: Record<string, RegExp> = {
  npm: /^(install|i|in|ins|inst|insta|instal|isnt|isnta|isntal|add|ci|update|up|upgrade|udpate|publish|unpublish|deprecate|login|adduser|logout|owner|access|token|dist-tag|star|search|view|info|show|v|outdated|audit|exec|x|create|init|pkg|hook|team|org|profile)$/,
  yarn: /^(install|add|upgrade|up|upgrade-interactive|publish|dlx|create|global|login|npm|unplug|info|outdated|audit|import)$/,
  pnpm: /^(install|i|add|update|up|upgrade|publish|dlx|create|fetch|import|audit|outdated|install-test|it|env|self-update)$/,
  bun: /^(install|i|add|a|update|upgrade|publish|x|create|c|link|pm)$/,
  pip: /^(install|download|wheel|index|search)$/,
  pipx: /^(install|run|inject|upgrade|upgrade-all|reinstall|reinstall-all)$/,
  uv: /^(add|sync|lock|pip|tool|python|publish|venv)$/,
  poetry: /^(add|install|update|lock|publish|self|source)$/,
  pdm: /^(add|install|update|lock|publish|sync)$/,
  gem: /^(install|update|push|fetch|sources|yank|owner|signin)$/,
  bundle: /^(install|update|add|outdated|lock|cache|package)$/,
  cargo: /^(install|publish|login|yank|owner|search|add|fetch|update|vendor)$/,
  go: /^(get|install)$/,
  composer: /^(require|install|update|create-project|global|self-update|outdated)$/,
  conda: /^(install|create|update|upgrade|env|remove|uninstall|search)$/,
  mamba: /^(install|create|update|upgrade|env|remove|uninstall|search)$/,
  deno: /^(install|upgrade|add|publish|cache)$/,
  dotnet: /^(add|restore|tool|nuget|new)$/,
};

/** System package managers need root and change the machine: always ask. */
export const systemPackages: Rule = (program, args, rc) => {
  const sub = parseOpts(args, { valued: 'oct' }).operands[0]?.value ?? '';
  if (/^(list|info|search|show|policy|depends|rdepends|--version|madison)$/.test(sub))
    return safe(rc, program);
  rc.add({
    class: 'network',
    risk: 'high',
    program,
    reason: `${program} installs or changes system packages`,
    fetches: true,
  });
};

export function packageManager(
  recurseExec: (program: string, args: readonly Arg[], rc: RuleContext) => void,
): Rule {
  return (program, args, rc, recurse) => {
    const opts = parseOpts(args, {
      valued: program === 'npm' ? 'wC' : program === 'go' ? 'C' : '',
      longValued: [
        '--prefix',
        '--workspace',
        '--filter',
        '--cwd',
        '--dir',
        '--registry',
        '--manifest-path',
        '--package',
      ],
      permute: false,
    });
    const sub = opts.operands[0]?.value ?? '';
    const rest = opts.operands.slice(1);
    if (!opts.operands[0]?.exact && opts.operands.length > 0) {
      rc.add({
        class: 'unknown',
        risk: 'high',
        program,
        reason: `${program} subcommand is computed at run time`,
      });
      return;
    }
    if (judgePackageConfig(program, sub, rest, rc)) return;
    // Runs a binary the project already installed: judge that command itself.
    const local =
      (program === 'bundle' && sub === 'exec') ||
      (['uv', 'poetry', 'pdm'].includes(program) && sub === 'run') ||
      (['pnpm', 'yarn'].includes(program) && sub === 'exec');
    if (local && recurse) {
      if (rest.length === 0) safe(rc, `${program} ${sub}`);
      else recurse(rest, rc);
      return;
    }
    const dlx =
      (['pnpm', 'yarn'].includes(program) && sub === 'dlx') ||
      (program === 'bun' && sub === 'x') ||
      (program === 'pipx' && sub === 'run');
    if (dlx || (program === 'npm' && (sub === 'exec' || sub === 'x'))) {
      recurseExec(dlx ? 'dlx' : 'exec', rest, rc);
      return;
    }
    if (program === 'go' && sub === 'mod' && rest[0]?.value === 'download') {
      return network('medium', 'downloads modules')(program, args, rc, () => {});
    }
    if (program === 'go' && sub === 'install' && !rest.some((a) => a.value.includes('@')))
      return safe(rc, `${program} ${sub}`);
    const bareYarn = program === 'yarn' && opts.operands.length === 0;
    const pattern = PM_NETWORK[program];
    if (
      bareYarn ||
      (pattern?.test(sub) && !(sub === 'init' && args.some((a) => /^(-y|--yes)$/.test(a.value))))
    ) {
      const global = opts.has('-g', '--global') || sub === 'global';
      rc.add({
        class: 'network',
        risk: global || sub === 'publish' ? 'high' : 'medium',
        program: `${program} ${sub}`.trim(),
        reason: `${program} ${sub} downloads or publishes packages${global ? ' (global install outside the workspace)' : ''}`,
        fetches: true,
        sessionKey: global ? undefined : `network:${program} ${sub}`.trim(),
      });
      return;
    }
    if (program === 'npm' && sub === 'init' && !args.some((a) => /^(-y|--yes)$/.test(a.value))) {
      rc.add({
        class: 'interactive',
        risk: 'low',
        program: 'npm init',
        reason: 'npm init prompts for answers',
        suggestion: 'Use npm init -y.',
      });
      return;
    }
    if (args.some((a) => /^--(script-shell|shell|node-options|userconfig|globalconfig)(=|$)/.test(a.value))) {
      rc.add({
        class: 'unknown',
        risk: 'high',
        program,
        reason: `${program} told to use another shell or configuration`,
      });
      return;
    }
    const script = ['npm', 'yarn', 'pnpm', 'bun'].includes(program)
      ? scriptName(program, sub, rest)
      : undefined;
    if (script) judgePackageScript(program, script, rc);
    safe(rc, `${program} ${sub}`.trim());
  };
}

// Well-known development tools: `npx <tool>` runs the workspace's copy (or a harmless download).
export const DEV_TOOLS = new Set(
  words(
    'tsc tsx ts-node eslint prettier biome jest vitest mocha ava tap c8 nyc playwright cypress',
    'esbuild vite webpack rollup parcel turbo nx next nuxt astro svelte-kit svelte-check vue-tsc',
    'tailwindcss postcss stylelint knip depcheck lerna changeset semantic-release tsup unbuild swc',
    'babel jsdoc typedoc storybook prisma drizzle-kit ts-jest vsce ncu npm-check-updates concurrently',
    'nodemon serve http-server husky lint-staged commitlint markdownlint cspell tslint standard xo',
    'uvu oxlint rslint dprint madge size-limit publint attw api-extractor wrangler',
  ),
);

export function npxRule(recurse: Recurse): Rule {
  return (program, args, rc) => {
    const opts = parseOpts(args, {
      valued: 'pc',
      longValued: ['--package', '--call', '--node-options', '--shell'],
      permute: false,
    });
    const call = opts.get('-c') ?? opts.get('--call');
    if (call !== undefined) {
      rc.nested(call, { via: `${program} -c` });
      return;
    }
    const head = opts.operands[0];
    if (!head) return safe(rc, program);
    const bin = head.value.replace(/^(@[^/]+\/)?([^@]+)(@.*)?$/, '$2');
    const pinned =
      /@[^/]*$/.test(head.value.slice(1)) || head.value.startsWith('@') || opts.has('-p', '--package');
    const local = head.exact && rc.isFile(path.join(rc.workspaceRoot, 'node_modules', '.bin', bin));
    if (program !== 'dlx' && head.exact && (local || (DEV_TOOLS.has(bin) && !pinned))) {
      recurse([lit(bin), ...opts.operands.slice(1)], rc);
      return;
    }
    rc.add({
      class: 'network',
      risk: 'medium',
      program: `npx ${head.value}`,
      reason: `downloads and runs the package ${head.value}`,
      fetches: true,
      sessionKey: `network:npx ${head.value}`,
    });
  };
}
