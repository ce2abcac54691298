// What a command's environment keeps: what builds need, never what looks like a secret.

const KEEP_ENV =
  /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_[A-Z_]+|TZ|TMPDIR|TMP|TEMP|CI|NODE_ENV|NODE_PATH|NODE_EXTRA_CA_CERTS|NVM_DIR|NVM_BIN|VOLTA_HOME|PNPM_HOME|BUN_INSTALL|DENO_DIR|PYENV_ROOT|VIRTUAL_ENV|CONDA_PREFIX|CONDA_DEFAULT_ENV|PYTHONPATH|GOPATH|GOROOT|GOCACHE|GOMODCACHE|GOFLAGS|CARGO_HOME|RUSTUP_HOME|JAVA_HOME|GRADLE_USER_HOME|MAVEN_HOME|XDG_[A-Z_]+|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|HTTPS?_PROXY|NO_PROXY|https?_proxy|no_proxy|npm_config_[A-Za-z_]+)$/;
const SECRET_ENV =
  /KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|SESSION|COOKIE|PRIVATE|^ANTHROPIC_/i;

/**
 * The environment commands see: an allowlist of what builds need (PATH, HOME, locale, toolchain
 * homes, proxies), minus anything that looks like a secret; plus settings that keep tools from
 * paging, prompting or colouring. NODE_OPTIONS is dropped: it would inject the host's loaders and
 * debug hooks into every node the command starts.
 */
export function scrubEnvironment(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !KEEP_ENV.test(name) || SECRET_ENV.test(name)) continue;
    // Proxy URLs with user:password@ carry credentials.
    if (/proxy/i.test(name) && /\/\/[^/@]*@/.test(value)) continue;
    out[name] = value;
  }
  return {
    ...out,
    TERM: 'dumb',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    GIT_EDITOR: 'true',
    GIT_TERMINAL_PROMPT: '0',
    NO_COLOR: '1',
    DEBIAN_FRONTEND: 'noninteractive',
  };
}
