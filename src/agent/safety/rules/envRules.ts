import * as path from 'node:path';
import type { RuleContext } from './commandTypes.ts';
import { isInside } from './pathRules.ts';

// Environment variables that make other programs run code: `GIT_SSH_COMMAND='rm -rf /' git fetch`,
// `PAGER=… git log`, `BASH_ENV=x.sh bash -c true`, `LD_PRELOAD=…`, `PATH=/tmp/evil:$PATH npm test`.
// Whether set as a prefix, with export/declare, or through `env NAME=…`, the value is judged.

/** Their value is a shell command some program runs. */
const COMMAND_VARS = new Set([
  'GIT_SSH_COMMAND',
  'GIT_SSH',
  'GIT_PAGER',
  'PAGER',
  'MANPAGER',
  'GIT_EDITOR',
  'GIT_SEQUENCE_EDITOR',
  'EDITOR',
  'VISUAL',
  'FCEDIT',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'GIT_EXTERNAL_DIFF',
  'GIT_PROXY_COMMAND',
  'PROMPT_COMMAND',
  'BROWSER',
  'LESSOPEN',
  'LESSCLOSE',
  'RSYNC_RSH',
  'CVS_RSH',
  'npm_config_script_shell',
  'npm_config_shell',
  'npm_config_git',
]);

/** Their value names code that programs load or run implicitly. */
const LOADER_VARS =
  /^(BASH_ENV|ENV|LD_PRELOAD|LD_AUDIT|LD_LIBRARY_PATH|DYLD_INSERT_LIBRARIES|DYLD_LIBRARY_PATH|PERL5OPT|PERL5DB|RUBYOPT|PYTHONSTARTUP|PYTHONINSPECT|GIT_EXEC_PATH|GIT_TEMPLATE_DIR|GIT_CONFIG_GLOBAL|GIT_CONFIG_SYSTEM|GIT_CONFIG_PARAMETERS|GIT_CONFIG_COUNT|GIT_CONFIG_KEY_\d+|GIT_CONFIG_VALUE_\d+|GIT_DIR|GIT_WORK_TREE|GIT_INDEX_FILE|GIT_OBJECT_DIRECTORY|GIT_ALTERNATE_OBJECT_DIRECTORIES|GIT_COMMON_DIR|SHELLOPTS|BASHOPTS|PS4|BASH_FUNC_.*|npm_config_node_options|npm_config_prefix|npm_config_globalconfig|npm_config_userconfig)$/;

/** NODE_OPTIONS flags that load code (memory limits and the like are fine). */
const NODE_CODE_FLAGS =
  /(^|\s)(-r|--require|--import|--loader|--experimental-loader|-e|--eval|--inspect\S*)(=|\s|$)/;

/** PATH entries from which a project may legitimately run its own tools. */
const TOOL_DIRS = /(^|\/)(node_modules\/\.bin|\.?venv\/bin|target\/(debug|release))\/?$/;

/** `value`: undefined when not statically known; `guess`: the value with unknown parts empty. */
export function judgeAssignment(
  name: string,
  value: string | undefined,
  guess: string,
  rc: RuleContext,
): void {
  const via = `$${name}`;
  if (COMMAND_VARS.has(name)) {
    if (value === undefined) {
      rc.add({
        class: 'unknown',
        risk: 'high',
        program: via,
        reason: `${via} is set to a command computed at run time`,
      });
      return;
    }
    // `PAGER=cat`, `GIT_EDITOR=true` are fine; `GIT_SSH_COMMAND='rm -rf /'` is judged as that command.
    if (value.trim() === '') return;
    rc.nested(value, { via, quiet: true });
    if (!/^[\w./-]+( -[\w-]+)*$/.test(value.trim())) {
      rc.add({
        class: 'unknown',
        risk: 'medium',
        program: via,
        reason: `${via} makes programs run: ${value.slice(0, 80)}`,
        sessionKey: `unknown:${via}`,
      });
    }
    return;
  }
  if (name === 'NODE_OPTIONS') {
    if (value === undefined || NODE_CODE_FLAGS.test(value)) {
      rc.add({
        class: 'unknown',
        risk: 'high',
        program: via,
        reason: `${via} makes every node process load code`,
      });
    }
    return;
  }
  if (LOADER_VARS.test(name)) {
    if (name === 'PS4' && value !== undefined && !/[$`]/.test(value)) return;
    rc.add({
      class: 'unknown',
      risk: 'high',
      program: via,
      reason: `${via} makes programs load or run code from ${value ?? 'a value computed at run time'}`,
    });
    return;
  }
  if (name === 'PATH') judgePath(guess, rc);
}

/** A PATH that puts writable or relative directories first lets any file pose as a known program. */
function judgePath(value: string, rc: RuleContext): void {
  const risky = value.split(':').filter((dir) => {
    if (dir === '') return false; // usually the unknown "$PATH" part
    if (TOOL_DIRS.test(dir)) return false;
    if (!path.isAbsolute(dir)) return true;
    const abs = path.resolve(dir);
    if (isInside(abs, rc.workspaceRoot) || isInside(abs, path.join(rc.home, 'Downloads'))) return true;
    return !isInside(abs, rc.home) && /^\/(tmp|var\/tmp|dev\/shm)(\/|$)/.test(abs);
  });
  if (risky.length === 0) return;
  rc.add({
    class: 'unknown',
    risk: 'medium',
    program: '$PATH',
    reason: `PATH puts ${risky.join(', ')} ahead of the system programs, so program names can no longer be trusted`,
    sessionKey: 'unknown:$PATH',
  });
}
