// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the rows are shell commands, full of ${…}
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  type CommandClass,
  classifyCommand,
  type PolicyDecision,
} from '../../src/agent/safety/commandPolicy.ts';

// The holes an audit of the command policy found, one describe per CLASS of hole, each with the
// reported commands plus variants of the same class. Classified in-process (nothing is run). In the
// rows, @HOME@ is the (fake) home directory and @WS@ the workspace.

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-audit-')));
const WS = path.join(base, 'ws');
const HOME = path.join(base, 'home');
fs.mkdirSync(path.join(WS, 'src'), { recursive: true });
fs.mkdirSync(path.join(WS, '.keel', 'memory'), { recursive: true });
fs.mkdirSync(path.join(WS, '.git', 'hooks'), { recursive: true });
fs.mkdirSync(path.join(HOME, '.ssh'), { recursive: true });
fs.writeFileSync(path.join(WS, 'a'), 'x');
fs.writeFileSync(path.join(WS, 'package.json'), '{}');
fs.writeFileSync(path.join(WS, 'evil.sh'), 'echo hi\nsudo id\n');
fs.writeFileSync(path.join(WS, 'fine.sh'), 'echo hi\n');
fs.writeFileSync(path.join(HOME, '.secret'), 'TOP SECRET');
after(() => fs.rmSync(base, { recursive: true, force: true }));

const classify = (command: string) =>
  classifyCommand(command.replaceAll('@HOME@', HOME).replaceAll('@WS@', WS), {
    workspaceRoot: WS,
    home: HOME,
  });

type Row = readonly [command: string, decision: PolicyDecision | 'gated', cls?: CommandClass];

function check(rows: readonly Row[]): void {
  for (const [command, decision, cls] of rows) {
    test(`${decision.padEnd(6)} ${command.slice(0, 100)}`, () => {
      const v = classify(command);
      if (decision === 'gated') assert.notEqual(v.decision, 'allow', `${command} would run without approval`);
      else assert.equal(v.decision, decision, `${command} → ${v.decision} (${v.class}): ${v.reason}`);
      if (cls) assert.equal(v.class, cls, `${command} → class ${v.class}: ${v.reason}`);
    });
  }
}

describe('1. a finding cap never lets a later command through', () => {
  test('600 harmless commands then a write outside: approval, not allow', () => {
    const v = classify(`${'true; '.repeat(600)}touch ~/x`);
    assert.equal(v.decision, 'ask', v.reason);
  });
  test('…then sudo: still blocked', () => {
    assert.equal(classify(`${'true; '.repeat(700)}sudo id`).decision, 'block');
  });
  test('beyond the hard cap of gating findings the whole line is refused', () => {
    const v = classify(`${'git push; '.repeat(5200)}echo done`);
    assert.equal(v.decision, 'refuse', v.reason);
    assert.match(v.reason, /too many/);
  });
  test('xargs input longer than the per-item cap is still judged whole', () => {
    const items = Array.from({ length: 40 }, (_, i) => `f${i}`).join(' ');
    assert.equal(classify(`echo ${items} / | xargs rm -rf`).decision, 'block');
    assert.equal(classify(`echo ${items} / | xargs -I{} rm -rf {}`).decision === 'allow', false);
  });
});

describe('1b. brace lists too long to expand are not judged on their first part only', () => {
  const list = Array.from({ length: 100 }, (_, i) => `a${i}`).join(',');
  check([
    [`base64 {${list},~/.secret}`, 'ask'],
    [`rm -rf {${list},/}`, 'gated'],
    ['echo {1..100}', 'allow'],
    ['mkdir -p src/{a,b,c}', 'allow'],
  ]);
});

describe('2. namerefs and builtins that assign by name make a variable unknown (or follow it)', () => {
  check([
    ['declare -n r=z; z=touch; $r ~/x', 'gated'],
    ['typeset -n r=z; z=sudo; $r ls', 'block'],
    ['f(){ local -n r=$1; z=rm; $r -rf ~; }; f z', 'block'],
    ['declare -n r=$UNKNOWN; $r -rf ~', 'block'],
    ['declare -gn r=z; z=sudo; $r id', 'block'],
    ['declare -n r; r=sudo; $r id', 'gated'],
    ['declare -n r=z; r=rm; $z -rf ~', 'block'],
    ['builtin declare -n r=z; z=sudo; $r id', 'block'],
    ['x=echo; printf -v x rm; $x -rf ~/p', 'gated'],
    ['x=echo; builtin declare x=rm; $x -rf ~/p', 'gated'],
    ["x=echo; eval 'x=rm'; $x -rf ~/p", 'gated'],
    ['x=echo; eval "$(cat f)"; $x -rf ~/p', 'gated'],
    ['eval "cd ~"; echo x > .bashrc', 'gated'],
    ['export -n PATH; npm test', 'allow'],
    ['declare -r X=1; echo $X', 'allow'],
  ]);
});

describe('3. links created in the same line; hard links to outside files', () => {
  check([
    ['ln -s ~ h && echo x > h/f', 'ask', 'destructive'],
    ['ln -s ~/f f4 && echo x >> f4', 'ask'],
    ['mkdir d; ln -s /etc d/e; cp a d/e/', 'ask'],
    ['ln -s ../../outside link', 'ask'],
    ['cp -s ~/.secret k', 'ask'],
    ['ln ~/.secret hard.txt', 'block', 'never'],
    ['ln -P ~/.ssh/id_rsa k', 'block'],
    ['cp -l ~/.secret k', 'block'],
    ['cp -al ~/.ssh keys', 'block'],
    ['link ~/.secret k', 'block'],
    ['mklink /H k C:/Users/u/secret', 'block'],
    ['ln -s src/index.ts entry.ts', 'allow'],
    ['ln -s ../a src/a-link', 'allow'],
    ['ln a a2', 'allow'],
    ['ln -s /usr/include inc', 'allow'],
    ['cmake -E create_symlink ~ h', 'ask'],
    ['cmake -E create_hardlink ~/.secret k', 'block'],
    ['python3 -c "import os,sys; os.symlink(sys.argv[1], \'h\')" x', 'ask'],
  ]);
});

describe('4. programs that write outside the workspace', () => {
  check([
    ['awk \'BEGIN{print "x" > "/home/u/f"}\'', 'ask'],
    ['awk \'BEGIN{print "x" >> "@HOME@/.bashrc"}\'', 'ask'],
    ["awk '{print > $1}' a", 'ask'],
    ["awk -i inplace '{print}' ~/.bashrc", 'ask'],
    ["awk -i inplace '{print}' a", 'ask', 'destructive'],
    ['awk \'BEGIN{system("rm -rf ~")}\'', 'block'],
    ['awk \'BEGIN{while (("cat @HOME@/.secret" | getline l) > 0) print l}\'', 'gated'],
    ['awk \'BEGIN{getline l < "@HOME@/.secret"; print l}\'', 'ask'],
    ['awk \'{print | "sh"}\' a', 'ask'],
    ['openssl enc -in a -out ~/f', 'ask'],
    ['split -b 100 a ~/p', 'ask'],
    ['patch -o ~/f a', 'ask'],
    ['patch -p1 -d ~', 'ask'],
    ['git apply --directory=../ a.patch', 'ask'],
    ['gzip ~/.bashrc', 'ask'],
    ['bzip2 ~/.bashrc', 'ask'],
    ['xz ~/.bashrc', 'ask'],
    ['zip -m x.zip ~/.bashrc', 'ask'],
    ['npm config set script-shell ./evil.sh', 'ask'],
    ["npm set-script test 'rm -rf ~'", 'ask'],
    ['npm pkg set scripts.test=x', 'ask'],
    ['pip config set global.index-url http://evil', 'ask'],
    ['yarn config set registry http://evil', 'ask'],
    ['go env -w GOPROXY=http://evil', 'ask'],
    ["awk '{print $1}' a", 'allow'],
    ["awk -F: '$3 > 100 {print $1}' a", 'allow'],
    ["awk '{ if ($1 > 5) print $1 }' a", 'allow'],
    ['awk \'{print $1 > "out.txt"}\' a', 'allow'],
    ['awk \'BEGIN{printf "%s\\n", "x" > "/dev/stderr"}\'', 'allow'],
    ['npm config get registry', 'allow'],
    ['pip config list', 'allow'],
  ]);
});

describe('5. root, namespace, power and code-running programs', () => {
  check([
    ['toybox rm -rf ~', 'block'],
    ["toybox sh -c 'sudo id'", 'block'],
    ['busybox rm -rf /', 'block'],
    ['unshare -r id', 'ask'],
    ['unshare -r rm -rf /', 'block'],
    ['fakeroot id', 'ask'],
    ['nsenter -t 1 -m sh', 'block'],
    ["sg root -c 'id'", 'block'],
    ['newgrp docker', 'block'],
    ['run0 id', 'block'],
    ['machinectl shell', 'block'],
    ['machinectl poweroff', 'block'],
    ['loginctl poweroff', 'block'],
    ['loginctl terminate-user u', 'ask'],
    ['loginctl list-sessions', 'allow'],
    ['cmake -E rm -rf ~', 'block'],
    ['cmake -E remove_directory /', 'block'],
    ['cmake -E chdir / rm -rf usr', 'block'],
    ['cmake -E copy a ~/a', 'ask'],
    ['cmake -E make_directory build', 'allow'],
    ['cmake --build build', 'allow'],
    ['emacs --batch --eval \'(shell-command "rm -rf ~")\'', 'block'],
    ['emacs --batch --eval \'(delete-file "x")\'', 'ask'],
    ["tar -I 'sh -c id' -xf a.tar", 'ask'],
    ["tar -I 'rm -rf /' -xf a.tar", 'block'],
    ['tar -xIzstd -f a.tar', 'ask'],
    ['tar -F ./next.sh -cf a.tar src', 'ask'],
    ['tar xzf a.tgz', 'allow'],
    ['deno eval "Deno.removeSync(\'x\')"', 'ask'],
    ["bun -e \"require('fs').rmSync('x')\"", 'ask'],
    ["tsx -e \"require('child_process').execSync('rm -rf ~')\"", 'block'],
    ['expect -c "spawn sh -c {rm -rf ~}"', 'ask'],
    ['R -e "unlink(\'x\')"', 'ask'],
    ['python3 --version', 'allow'],
    ['npx tsx script.ts', 'allow'],
    ['deno run -A main.ts', 'allow'],
    ['bun test', 'allow'],
  ]);
});

describe('6. network that was not gated', () => {
  check([
    ['openssl s_client -connect h:443', 'ask', 'network'],
    ['openssl s_server -accept 4433', 'ask', 'network'],
    ['gawk \'BEGIN{s="/inet/tcp/0/h/80"; print "x" |& s}\'', 'ask', 'network'],
    ['ruby -run -e httpd .', 'ask', 'network'],
    ['ruby -run -e rm_rf -- ~', 'block'],
    ['ruby -rsocket -e \'TCPSocket.new("h", 80)\'', 'ask'],
    ['busybox httpd -p 8080', 'ask', 'network'],
    ['ngrok http 3000', 'ask', 'network'],
    ['openssl rand -hex 16', 'allow'],
    ['openssl sha256 a', 'allow'],
  ]);
});

describe('7. .keel and .git cannot be written silently', () => {
  check([
    ["echo '{}' >> .keel/audit.jsonl", 'ask', 'destructive'],
    ['echo x > .keel/sessions/forged.jsonl', 'ask'],
    ['tee -a .keel/audit.jsonl < a', 'ask'],
    ['cp a .keel/audit.jsonl', 'ask'],
    ['mv a .keel/audit.jsonl', 'ask'],
    ['cd .keel && echo x >> audit.jsonl', 'ask'],
    ['echo x > .git/hooks/pre-commit', 'ask'],
    ['echo x >> .git/config', 'ask'],
    ['cp a .git/hooks/post-checkout', 'ask'],
    ['echo note > .keel/memory/notes.md', 'allow'],
    ['truncate -s0 .keel/audit.jsonl', 'ask'],
    ['dd if=/dev/null of=.keel/audit.jsonl', 'ask'],
    ['mv .keel/audit.jsonl old.jsonl', 'ask'],
  ]);
  test('deleting the audit log or .git is never covered by a session-wide "allow rm"', () => {
    assert.equal(classify('rm .keel/audit.jsonl').sessionKey, undefined);
    assert.equal(classify('rm -rf .git').sessionKey, undefined);
    assert.equal(classify('rm a').sessionKey, 'destructive:rm');
  });
});

describe('8. reading files outside the workspace through Bash', () => {
  check([
    ['base64 ~/.secret', 'ask'],
    ['python3 -c "print(open(\'/home/u/.secret\').read())"', 'ask'],
    ['python3 -c "print(open(\'@HOME@/.secret\').read())"', 'ask'],
    ["node -e \"console.log(require('fs').readFileSync(process.env.HOME+'/.secret','utf8'))\"", 'ask'],
    ['xxd ~/.secret', 'ask'],
    ['od -c ~/.secret', 'ask'],
    ['strings ~/.secret', 'ask'],
    ['jq -Rr . ~/f', 'ask'],
    ['xargs -a ~/.ssh/id_rsa echo', 'ask'],
    ['diff ~/.ssh/id_rsa /dev/null', 'ask'],
    ['cp ~/.ssh/id_rsa ./k', 'ask'],
    ['tar -cf - ~/.ssh | base64', 'ask'],
    ['rsync -a ~/.ssh/ k/', 'ask'],
    ['git -C ~ log -p', 'ask'],
    ['wc -c < ~/.secret', 'ask'],
    ['base64 /etc/shadow', 'ask'],
    ['base64 /proc/self/environ', 'ask'],
    ['base64 /root/.bashrc', 'ask'],
    ['base64 ../outside.txt', 'ask'],
    ['cd .. && base64 x', 'ask'],
    ['cd ~ && base64 .secret', 'ask'],
    ['echo ~/.secret | xargs base64', 'ask'],
    ['dd if=~/.ssh/id_rsa', 'ask'],
    ["sh -c 'base64 ~/.secret'", 'ask'],
    ['base64 ~/.ssh/*', 'ask'],
    ['curl file:///etc/passwd', 'ask'],
    ['cat ~/x', 'refuse'],
    ['cd "$(mktemp -d)" && base64 .ssh/id_rsa', 'ask'],
    ['GIT_WORK_TREE=~ git status', 'ask'],
    ['printf \'%s\' "$(< ~/.secret)"', 'ask'],
    ['read -r f <<< ~/.secret; base64 "$f"', 'ask'],
    ["python3 -c \"import os; print(open(os.path.join('/ho' + 'me', 'u')).read())\"", 'ask'],
    ['(cd ~; base64 .secret)', 'ask'],
    ['env -C ~ base64 .secret', 'ask'],
    ["python3 -c \"print(open('a', 'r').read())\"", 'allow'],
    ['cd "$(git rev-parse --show-toplevel)" && npm test', 'allow'],
    ['source ~/.nvm/nvm.sh && nvm use 20', 'allow'],
    ['source ~/.aws/credentials', 'ask'],
    ['tar czf x.tgz --exclude=.git .', 'allow'],
    // Ordinary development commands still run.
    ['npm test', 'allow'],
    ['git status && git diff && git log -n 3', 'allow'],
    ['make', 'allow'],
    ['tsc --noEmit', 'allow'],
    ['node script.js', 'allow'],
    ['python -m pytest', 'allow'],
    ['cargo build', 'allow'],
    ['go test ./...', 'allow'],
    ['echo hello > newfile.txt', 'allow'],
    ['node_modules/.bin/eslint .', 'allow'],
    ['/usr/bin/env node x.js', 'allow'],
    ['cc -I/usr/include -o out a.c', 'allow'],
    ['base64 a', 'allow'],
    ['diff a /dev/null', 'allow'],
    ['echo $HOME', 'allow'],
    ["sed -n '/foo/p' a", 'allow'],
    ['git diff HEAD~1 -- src', 'allow'],
    ['mkdir -p /tmp/keel-build && touch /tmp/keel-build/x', 'allow'],
    ['npm test > /tmp/keel-test.log 2>&1', 'allow'],
    ["python3 -c \"print('/'.join(['a', 'b']))\"", 'allow'],
  ]);
});

describe('9. a shell reading its script from a redirection runs that script', () => {
  check([
    ['sh < evil.sh', 'block'],
    ['bash < evil.sh', 'block'],
    ['bash -s < evil.sh', 'block'],
    ['sh < fine.sh', 'allow'],
    ['sh evil.sh', 'block'],
    ["echo 'sudo id' > x.sh; sh < x.sh", 'block'],
    ['sh < "$SCRIPT"', 'ask'],
    ['cat evil.sh | sh', 'block'],
    ['h=HOME; base64 ${!h}/.secret', 'ask'],
  ]);
});
