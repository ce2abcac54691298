// The CLI contract (stable: other tools and checks drive Keel through it).
export const USAGE = `Usage:
  keel run [--workspace DIR] [--model ID] [--fallback-model ID]... [--max-turns N]
           [--approve never|safe|auto|all] [--json] [--resume ID] [--context-window TOKENS] [--demo]
           [--mcp-config FILE]... [--job-wait SECONDS] [--effort low|medium|high|max | --no-thinking]
           [--agent NAME | --plan] [--from-plan FILE] [--api chat|responses] [--image FILE]...
           [--subagent-model KIND=MODEL]... [--classifier-model ID]   (with --approve auto)
           PROMPT | "/COMMAND ARGS"   (a slash command: a prompt file, or /model /cost /memory
           /compact /clear /init /review; --plan writes .keel/plans/<session>.md; --image attaches
           a PNG/JPEG/GIF/WebP in the workspace, as @FILE in the PROMPT does)
  keel commands [--workspace DIR] [--json]   (slash commands found: name, file, description)
  keel agents [--workspace DIR] [--json]   (custom agents found, and the built-in plan)
  keel tool [NAME 'JSON-INPUT'] [--workspace DIR] [--approve never|safe|auto|all]   (no NAME: list the tools)
  keel trace SESSION-ID|FILE [--workspace DIR] [--html OUT.html]
  keel eval --from-session SESSION-ID OUT-DIR [--workspace DIR]
  keel eval --from-feedback OUT-DIR [--workspace DIR]   (draft tasks from thumbs-down sessions)
  keel eval SUITE [--trials K] [--concurrency N] [--model ID] [--json FILE] [--html FILE]
           [--filter GLOB] [--retry-infra R] [--out DIR] [--emulator] [--effort LEVEL | --no-thinking]
           [--shard I/N]
  keel eval merge REPORT.json... [--json FILE] [--html FILE]   (the --shard runs' reports as one)
  keel eval calibrate SET.json [--model ID] [--json FILE]   (the judge grader against labelled trials)
  keel doctor [--sandbox on|off|required]
  keel sessions [--workspace DIR] [--json]   (past sessions, newest first: the IDs --resume takes)
  keel trust [--workspace DIR] [--yes | --revoke] [--json]   (what the workspace supplies that would
           steer Keel — MCP servers, network allowances, memory, a long task — and your approval of it)
  keel memory search QUERY [--workspace DIR] [--json]
  keel memory rollback [--workspace DIR]
  keel restore SESSION-ID --before-prompt N [--fork] [--workspace DIR] [--dry-run] [--force] [--json]
  keel restore SESSION-ID --undo [--workspace DIR] [--dry-run] [--force] [--json]
  keel restore --stats [--workspace DIR] [--json]
  keel task init [--workspace DIR] [--model ID] [--approve never|safe|auto|all] [--json] "SPEC"
  keel task run [--workspace DIR] [--sessions N] [--max-turns N] [--model ID] [--approve …] [--json]
           (task init and run also take --effort LEVEL | --no-thinking, --classifier-model ID)
  keel task status [--workspace DIR] [--json]
  keel --version

run and tool also take --sandbox on|off|required (default on when available; required = refuse
commands without a sandbox) and --allow-domain DOMAIN... (sandboxed commands reach it through Keel's
proxy without asking; *.example.com for subdomains; KEEL_ALLOWED_DOMAINS=a.com,b.org does the same).
KEEL_BWRAP=path picks the bubblewrap binary.
run, tool and restore take --add-dir DIR... (more workspace folders, writable like the first; a path
may start with a folder's name, e.g. api/src/x.ts; .keel state stays in the first; restore needs the
same --add-dir to put back the other folders' files).

Thinking: on at --effort medium for models that think (KEEL_EFFORT=low|medium|high|max|off sets the
default); --no-thinking turns it off. Replies may use the model's whole output limit.

Models: a bare ID is Anthropic's (or --model anthropic:ID); --model openai:ID (OPENAI_API_KEY,
  OPENAI_BASE_URL for any OpenAI-compatible server; --api responses for the Responses API),
  azure:DEPLOYMENT (AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION), ollama:ID (no
  key; OLLAMA_HOST, default localhost:11434). --subagent-model explore=anthropic:claude-haiku-4-5 (or
  KEEL_SUBAGENT_MODELS=explore=…,general=…) runs a sub-agent kind on another model.
Environment: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (any Anthropic-compatible endpoint), KEEL_MODEL,
  KEEL_MCP_INPUT_<ID> (the value of \${input:id} in an mcp.json), KEEL_RULES_DISABLED=claude,cursor
  (rules-file sources not read: agents, claude, copilot, cursor, cline, gemini),
  KEEL_CLASSIFIER_MODEL (--approve auto's classifier; default: the session's model).
Exit codes: 0 finished · 1 failed · 2 usage error · 130 aborted (Ctrl-C) · 143 terminated (SIGTERM)`;
