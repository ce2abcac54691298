// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the demo scripts quote JavaScript source text
// The demo's scripted repertoire, shared by `npm start` (the panel) and `keel run --demo`. Stateless:
// each request is answered from what the user last typed and how many assistant turns followed it, so
// a conversation can go on (a new prompt starts a new script) and every scripted step sees the real
// tool results (an Edit that failed, a command the user declined) and answers accordingly.
import type { MessagesRequest, Scenario, ScriptedBlock, ScriptedReply } from '../types.ts';

type Block = { type?: unknown; text?: unknown; content?: unknown; is_error?: unknown };

const GREET_FN = 'export function greet(name) {\n  return `Hello, ${name}!`;\n}\n';
const FAREWELL_FN = '\nexport function farewell(name) {\n  return `Goodbye, ${name}!`;\n}\n';
const NOTE =
  '\n\n_(Demo: these answers are scripted by the bundled emulator; no model was called and nothing left this machine.)_';

const text = (t: string): ScriptedBlock => ({ type: 'text', text: t });
const tool = (name: string, input: unknown): ScriptedBlock => ({ type: 'tool_use', name, input });
const reply = (...content: ScriptedBlock[]): ScriptedReply => ({ content });

function blocks(content: unknown): Block[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content as Block[]) : [];
}
function textOf(content: unknown): string {
  return blocks(content)
    .map((b) => (typeof b.text === 'string' ? b.text : b.type === 'tool_result' ? textOf(b.content) : ''))
    .join('\n');
}
const typed = (b: Block) =>
  b.type === 'text' && typeof b.text === 'string' && !b.text.trimStart().startsWith('<system-reminder>');

/** What the user typed last and how far the script for it has got. */
export function demoState(req: MessagesRequest): {
  prompt: string;
  step: number;
  lastResult: string;
  failed: boolean;
} {
  const messages = req.messages;
  let at = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user' && blocks(m.content).some(typed)) {
      at = i;
      break;
    }
  }
  const prompt =
    at < 0
      ? ''
      : blocks(messages[at]!.content)
          .filter(typed)
          .map((b) => String(b.text).replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, ''))
          .join('\n');
  const step = messages.slice(at + 1).filter((m) => m.role === 'assistant').length;
  const last = messages.at(-1);
  const results = last ? blocks(last.content).filter((b) => b.type === 'tool_result') : [];
  return {
    prompt,
    step,
    lastResult: results.map((r) => textOf(r.content)).join('\n'),
    failed: results.some((r) => r.is_error === true),
  };
}

export type DemoScript = 'explain' | 'edit' | 'fix' | 'approval' | 'tour';

export function demoScriptFor(prompt: string): DemoScript {
  if (/\b(explain|what does|how does|what is)\b/i.test(prompt)) return 'explain';
  if (/\bfix\w*\b/i.test(prompt)) return 'fix';
  if (/\b(add|implement|write|create)\b/i.test(prompt)) return 'edit';
  if (/\b(delete|remove|run|clean|push|deploy)\b/i.test(prompt)) return 'approval';
  return 'tour';
}

/**
 * A read the script depends on failed (e.g. `--workspace` points at a folder without the demo's
 * project): say so and stop, instead of answering as if the file had been read.
 */
function couldNotRead(what: string, lastResult: string): ScriptedReply {
  return reply(
    text(
      `I could not read ${what}: ${lastResult.slice(0, 200)}\n\n` +
        "The demo's scripted answers are about its own sample project (`src/greet.js`); this workspace " +
        'does not have it, so the demo stops here.' +
        NOTE,
    ),
  );
}

function explain(step: number, lastResult: string, failed: boolean): ScriptedReply {
  if (step === 0) return reply(text("I'll read the code first."), tool('Read', { path: 'src/greet.js' }));
  if (failed) return couldNotRead('`src/greet.js`', lastResult);
  return reply(
    text(
      '`greet(name)` ([src/greet.js:3](src/greet.js#L3)) returns the greeting `Hello, <name>!` as a template ' +
        'string; it is the only export. `test/greet.test.js` checks it with `node:test` (`npm test`).\n\n' +
        'Ask me to "add a farewell function" to see an edit you can review hunk by hunk.' +
        NOTE,
    ),
  );
}

function edit(
  script: 'edit' | 'fix',
  state: { step: number; lastResult: string; failed: boolean },
): ScriptedReply {
  const { step, lastResult, failed } = state;
  if (step === 0)
    return reply(text("I'll read `src/greet.js` first."), tool('Read', { path: 'src/greet.js' }));
  if (step === 1) {
    if (failed) return couldNotRead('`src/greet.js`', lastResult);
    if (script === 'edit' && lastResult.includes('farewell'))
      return reply(
        text('`src/greet.js` already has a `farewell` function, so there is nothing to add.' + NOTE),
      );
    if (script === 'fix' && lastResult.includes("|| 'friend'"))
      return reply(text('`greet` already handles an empty name, so there is nothing to fix.' + NOTE));
    return script === 'edit'
      ? reply(
          text('Adding `farewell(name)` next to `greet`.'),
          tool('Edit', { path: 'src/greet.js', old_string: GREET_FN, new_string: GREET_FN + FAREWELL_FN }),
        )
      : reply(
          text("`greet('')` says `Hello, !`. I'll fall back to \"friend\" for an empty name."),
          tool('Edit', {
            path: 'src/greet.js',
            old_string: 'return `Hello, ${name}!`;',
            new_string: "return `Hello, ${name.trim() || 'friend'}!`;",
          }),
        );
  }
  if (step === 2) {
    if (failed) return reply(text(`The edit did not apply: ${lastResult.slice(0, 300)}` + NOTE));
    return reply(text('Now the tests.'), tool('Bash', { command: 'npm test' }));
  }
  // The Bash result's first line, or node's test summary in either reporter (tap "#", spec "ℹ").
  const passed = !failed && /^Exit code: 0$|"exit_code":0|exit code 0|(?:#|ℹ) fail 0/m.test(lastResult);
  return reply(
    text(
      `${script === 'edit' ? 'Added `farewell(name)` to `src/greet.js`' : 'Fixed the empty-name case in `src/greet.js`'}; ` +
        `${passed ? 'the tests pass.' : 'the tests did not pass — see the command output above.'}\n\n` +
        'In VS Code the change is **pending review**: Accept or Reject each hunk with the CodeLens in the ' +
        'editor, or all at once from the edit card; a rejected hunk gets its original bytes back. ' +
        '(`keel run --demo` prints the diff instead.)' +
        NOTE,
    ),
  );
}

function approval(prompt: string, step: number, lastResult: string, failed: boolean): ScriptedReply {
  const push = /\b(run|push|deploy)\b/i.test(prompt) && !/\b(delete|remove|clean)\b/i.test(prompt);
  const command = push ? 'git push origin main' : 'rm -r build';
  if (step === 0)
    return reply(
      text(
        push
          ? 'Publishing means `git push`, which changes a remote, so Keel asks you first.'
          : 'Deleting a folder is destructive, so Keel asks you first.',
      ),
      tool('Bash', { command }),
    );
  // Refused by policy (no terminal, --approve never): nobody was asked, so "you declined" would be false.
  const unasked = failed && /No approval was possible/i.test(lastResult);
  const denied = failed && /DENIED_BY_USER|denied/i.test(lastResult);
  return reply(
    text(
      (unasked
        ? `No approval was possible for \`${command}\` (nobody could be asked), so nothing ran. ` +
          'On a terminal Keel asks; without one, `--approve all` allows what asks. '
        : denied
          ? `You declined \`${command}\`, so nothing ran. `
          : failed
            ? `\`${command}\` failed: ${lastResult.slice(0, 200)} `
            : `\`${command}\` ran after your approval. `) +
        'Commands on the safe list (tests, reads, builds) run without asking; destructive, network and ' +
        'protected-file actions always ask, and the hard blacklist (`sudo`, `rm -rf /`…) never runs.' +
        NOTE,
    ),
  );
}

function tour(step: number, lastResult: string, failed: boolean): ScriptedReply {
  switch (step) {
    case 0:
      return reply(text('A quick tour. First, what is here:'), tool('LS', { path: '.' }));
    case 1:
      if (failed) return couldNotRead('the workspace', lastResult);
      return reply(text('The README says what the project is.'), tool('Read', { path: 'README.md' }));
    case 2:
      if (failed) return couldNotRead('`README.md`', lastResult);
      return reply(text('And the code itself.'), tool('Read', { path: 'src/greet.js' }));
    case 3:
      if (failed) return couldNotRead('`src/greet.js`', lastResult);
      if (lastResult.includes('/** Greets')) return reply(text('`greet` is already documented.' + NOTE));
      return reply(
        text('One small edit to show the review flow: a doc comment for `greet`.'),
        tool('Edit', {
          path: 'src/greet.js',
          old_string: 'export function greet(name) {',
          new_string: '/** Greets `name`: greet("Ada") === "Hello, Ada!". */\nexport function greet(name) {',
        }),
      );
    default:
      return reply(
        text(
          (failed ? `The edit did not apply: ${lastResult.slice(0, 200)}\n\n` : '') +
            'That was the tour: I listed the workspace, read the README and `src/greet.js` ' +
            '([src/greet.js:3](src/greet.js#L3)), and made one edit, now **pending review** in VS Code — Accept or ' +
            'Reject it with the CodeLens above the change (the CLI prints the diff).\n\nTry next: "explain src/greet.js", "add a farewell function", ' +
            '"delete the build folder".' +
            NOTE,
        ),
      );
  }
}

export function demoReply(req: MessagesRequest): ScriptedReply {
  const state = demoState(req);
  const script = demoScriptFor(state.prompt);
  switch (script) {
    case 'explain':
      return explain(state.step, state.lastResult, state.failed);
    case 'edit':
    case 'fix':
      return edit(script, state);
    case 'approval':
      return approval(state.prompt, state.step, state.lastResult, state.failed);
    case 'tour':
      return tour(state.step, state.lastResult, state.failed);
  }
}

export const demoScenario: Scenario = { name: 'demo', respond: (req) => demoReply(req) };
