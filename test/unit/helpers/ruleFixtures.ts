// A repository carrying one rules file per peer convention (projectRules.test.ts, rulesCli.test.ts).

/** One file per peer convention, each with a marker word the prompt must carry. */
export const PEER_FILES: Record<string, string> = {
  'AGENTS.md': 'Rule AGENTS-ROOT.\n',
  'CLAUDE.md': 'Rule CLAUDE-MAIN.\n',
  'CLAUDE.local.md': 'Rule CLAUDE-LOCAL.\n',
  '.github/copilot-instructions.md': 'Rule COPILOT-MAIN.\n',
  '.github/instructions/all.instructions.md': '---\napplyTo: "**"\n---\nRule COPILOT-ALL.\n',
  '.github/instructions/ts.instructions.md': '---\napplyTo: "**/*.ts"\n---\nRule COPILOT-TS-SCOPED.\n',
  '.cursor/rules/always.mdc': '---\ndescription: Always\nalwaysApply: true\n---\nRule CURSOR-ALWAYS.\n',
  '.cursor/rules/db.mdc': '---\nglobs: db/**, *.sql\nalwaysApply: false\n---\nRule CURSOR-DB-SCOPED.\n',
  '.cursor/rules/ask.mdc': '---\ndescription: Use when writing release notes\n---\nRule CURSOR-ASK.\n',
  '.clinerules/01-style.md': 'Rule CLINE-ONE.\n',
  '.clinerules/02-tests.md': 'Rule CLINE-TWO.\n',
  'GEMINI.md': 'Rule GEMINI-MAIN.\n',
};

/** The documented order of the always-on files above (docs/rules.md). */
export const ALWAYS_ORDER = [
  'AGENTS-ROOT',
  'CLAUDE-MAIN',
  'CLAUDE-LOCAL',
  'COPILOT-MAIN',
  'COPILOT-ALL',
  'CURSOR-ALWAYS',
  'CLINE-ONE',
  'CLINE-TWO',
  'GEMINI-MAIN',
];
