import { collectSteeringItems, type SteeringItem } from './items.ts';
import { type StateLedger, stateLedger } from './ledger.ts';
import { type TrustStore, trustStore } from './store.ts';

// The one place that decides what a workspace may steer (DESIGN.md §5). Every source is one of:
// Keel's own state (it wrote it and recorded the hash outside the workspace), the user's (user-level
// files, settings, approvals), or the repository's (anything that came with the checkout or that a
// command wrote). The repository's items below are used only once the user approved that exact
// content; an untrusted VS Code workspace gets none of them.

export interface TrustRoom {
  readonly root: string;
  /** VS Code's workspace trust (the CLI: always true). */
  readonly workspaceTrusted: boolean;
  readonly ledger: StateLedger;
  readonly store: TrustStore;
  /** What the workspace supplies that would steer Keel (a snapshot taken when the room was made). */
  items(): readonly SteeringItem[];
  isApproved(item: SteeringItem): boolean;
  /** The item of a workspace-defined MCP server with this name and definition hash, if listed. */
  mcpItem(server: { readonly name: string; readonly hash: string }): SteeringItem | undefined;
  /** Items present but not approved (all of them in an untrusted workspace). */
  pending(): readonly SteeringItem[];
  approve(items: readonly SteeringItem[], now: number): void;
  /** Domains of the approved network items (the workspace's registries the user allowed). */
  trustedDomains(): string[];
  /** One line for the user when something is not used, naming how to approve it. */
  pendingNotice(): string | undefined;
}

export function createTrustRoom(options: {
  readonly root: string;
  readonly workspaceTrusted?: boolean;
  readonly env?: NodeJS.ProcessEnv;
  /** How this host's user approves, in its words. Default: the CLI's `keel trust`. */
  readonly howToApprove?: string;
}): TrustRoom {
  const howToApprove = options.howToApprove ?? 'review them with `keel trust`';
  const env = options.env ?? process.env;
  const ledger = stateLedger(options.root, env);
  const store = trustStore(options.root, env);
  const workspaceTrusted = options.workspaceTrusted ?? true;
  let snapshot: SteeringItem[] | undefined;
  let approvals = store.read();
  const items = () => {
    snapshot ??= collectSteeringItems(options.root, ledger);
    return snapshot;
  };
  const isApproved = (item: SteeringItem) => workspaceTrusted && approvals[item.id]?.hash === item.hash;
  return {
    root: options.root,
    workspaceTrusted,
    ledger,
    store,
    items,
    isApproved,
    mcpItem: (server) =>
      items().find(
        (i) => i.kind === 'mcp_server' && i.hash === server.hash && i.id.endsWith(`#${server.name}`),
      ),
    pending: () => items().filter((i) => !isApproved(i)),
    trustedDomains: () =>
      items().flatMap((i) => (i.kind === 'network' && isApproved(i) ? [...(i.domains ?? [])] : [])),
    approve(chosen, now) {
      store.approve(chosen, now);
      approvals = store.read();
    },
    pendingNotice() {
      const pending = items().filter((i) => !isApproved(i));
      if (pending.length === 0) return undefined;
      const what = pending.map((i) => i.title).join('; ');
      return workspaceTrusted
        ? `This workspace supplies ${pending.length} thing${pending.length === 1 ? '' : 's'} that would steer Keel, not used until you approve ${pending.length === 1 ? 'it' : 'them'}; ${howToApprove}: ${what}.`
        : `This workspace is not trusted: what it supplies to steer Keel is not used (${what}).`;
    },
  };
}

export type { SteeringItem, SteeringKind } from './items.ts';
