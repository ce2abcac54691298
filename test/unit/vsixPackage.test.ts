import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { tempWorkspace } from './helpers/cli.ts';

// What a VS Code user sees on the extension's page and on first install (issue 20): the packaged .vsix
// carries a user README (not the developer's npm ci / apt / code-server page), a CHANGELOG, a
// getting-started walkthrough whose steps ship with it, and the manifest fields the Marketplace shows.

interface Manifest {
  version: string;
  keywords?: string[];
  categories?: string[];
  homepage?: string;
  bugs?: { url?: string };
  dependencies?: Record<string, string>;
  contributes: {
    commands: { command: string }[];
    walkthroughs?: {
      id: string;
      steps: { id: string; title: string; description: string; media: { markdown?: string } }[];
    }[];
  };
}

let vsix: string | undefined;
let skipped: string | undefined;
let files: string[] = [];

function unzip(args: string[]): string {
  const result = spawnSync('unzip', args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`unzip ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}
const read = (name: string) => unzip(['-p', vsix!, name]);

before(async () => {
  // Packaging is impossible only without vsce or unzip; any other failure is a failure of the test.
  try {
    createRequire(path.resolve('package.json')).resolve('@vscode/vsce/package.json');
  } catch {
    skipped = '@vscode/vsce is not installed';
  }
  if (spawnSync('unzip', ['-v']).error) skipped = 'no unzip command';
  if (skipped) {
    console.log(`# skipping the packaged-vsix checks: ${skipped}`);
    return;
  }
  const { packageVsix } = (await import(pathToFileURL(path.resolve('scripts/package-vsix.mjs')).href)) as {
    packageVsix: (o: { out: string; build: boolean }) => { path: string };
  };
  // Reuse the extension bundle `npm run build` made; build one only when there is none.
  const out = path.join(tempWorkspace(), 'keel.vsix');
  vsix = packageVsix({ out, build: !fs.existsSync('dist/extension.cjs') }).path;
  files = unzip(['-Z1', vsix]).split('\n').filter(Boolean);
});

describe('the packaged .vsix', () => {
  test('its README is the user README: what Keel is, a key or a local model, privacy, settings', (t) => {
    if (skipped) return t.skip(skipped);
    const readme = read('extension/readme.md');
    assert.match(readme, /^# Keel — a coding agent/m);
    for (const heading of ['## Getting started', '## Privacy', '## Settings'])
      assert.ok(readme.includes(heading), heading);
    assert.match(readme, /Keel: Set API Key/);
    assert.match(readme, /local model/i);
    assert.match(readme, /keel\.baseUrl/);
    // None of the developer's setup reaches a VS Code user.
    assert.doesNotMatch(readme, /npm ci|npm start|apt-get install -y build-essential|\.cs\/|seed 00/);
    assert.notEqual(readme, fs.readFileSync('README.md', 'utf8'));
  });

  test('it has a CHANGELOG for this version', (t) => {
    if (skipped) return t.skip(skipped);
    const manifest = JSON.parse(read('extension/package.json')) as Manifest;
    assert.match(
      read('extension/changelog.md'),
      new RegExp(`^## ${manifest.version.replace(/\./g, '\\.')}\\b`, 'm'),
    );
  });

  test('its walkthrough steps open commands Keel has, and their markdown ships in the .vsix', (t) => {
    if (skipped) return t.skip(skipped);
    const manifest = JSON.parse(read('extension/package.json')) as Manifest;
    const walkthrough = manifest.contributes.walkthroughs?.[0];
    assert.ok(walkthrough, 'contributes.walkthroughs');
    assert.ok(walkthrough.steps.length >= 4);
    const commands = new Set(manifest.contributes.commands.map((c) => c.command));
    const stepIds = walkthrough.steps.map((s) => s.id);
    assert.ok(stepIds.includes('connect'), 'a step connects a model (key or local server)');
    for (const step of walkthrough.steps) {
      const markdown = step.media.markdown;
      assert.ok(
        markdown && files.includes(`extension/${markdown}`),
        `${step.id}: ${markdown} is in the .vsix`,
      );
      assert.ok(read(`extension/${markdown}`).trim().startsWith('# '), `${markdown} has a title`);
      for (const m of step.description.matchAll(/\(command:([\w.]+)/g)) {
        const command = m[1]!;
        assert.ok(command.startsWith('workbench.') || commands.has(command), `${step.id}: ${command}`);
      }
    }
  });

  test('its manifest has keywords, categories, a homepage and where to report bugs', (t) => {
    if (skipped) return t.skip(skipped);
    const manifest = JSON.parse(read('extension/package.json')) as Manifest;
    assert.ok((manifest.keywords ?? []).length >= 5);
    assert.ok((manifest.categories ?? []).includes('AI'));
    assert.match(manifest.homepage ?? '', /^https:\/\//);
    assert.match(manifest.bugs?.url ?? '', /^https:\/\/.*issues/);
  });

  test('it ships the one runtime module the bundle needs, and no other node_modules', (t) => {
    if (skipped) return t.skip(skipped);
    assert.ok(files.includes('extension/node_modules/mvdan-sh/index.js'));
    const modules = new Set(
      files.filter((f) => f.startsWith('extension/node_modules/')).map((f) => f.split('/')[2]),
    );
    assert.deepEqual([...modules], ['mvdan-sh']);
    assert.ok(files.includes('extension/dist/extension.cjs'));
    // The Bedrock / Vertex SDKs: a file of their own, loaded only when such a profile is used.
    assert.ok(files.includes('extension/dist/platform-sdks.cjs'));
    assert.ok(!files.some((f) => f.startsWith('extension/dist/cli')), 'the CLI is not in the .vsix');
  });
});

describe("the repository's README (the developer's page)", () => {
  test('repeats no sentence and names no internal document', () => {
    // Sentences, not lines: a repeated sentence wraps differently the second time.
    const sentences = fs
      .readFileSync('README.md', 'utf8')
      .replace(/```[\s\S]*?```/g, '')
      .replace(/\s+/g, ' ')
      .split(/(?<=[.!?])\s+/)
      .filter((t) => t.length > 40);
    const seen = new Set<string>();
    for (const sentence of sentences) {
      assert.ok(!seen.has(sentence), `repeated: ${sentence}`);
      seen.add(sentence);
    }
    assert.doesNotMatch(fs.readFileSync('README.md', 'utf8'), /\bseed 0\d\d\b/);
  });
});
