import * as net from 'node:net';
import * as os from 'node:os';

// The one answer to "is this IP address somewhere a sandboxed command may be connected to?", used by
// every decision of the network proxy (the literal a client asked for and every address a name
// resolved to) and by the allow-list loader. An address is classified in whatever spelling it comes
// in: IPv4 dotted or in the legacy forms resolvers still accept (`127.1`, `0x7f.1`, `2130706433`,
// `0177.0.0.1`), IPv6 full or compressed, bracketed, with a zone id (`fe80::1%eth0`), and IPv6 forms
// that carry an IPv4 address (IPv4-mapped `::ffff:7f00:1`, IPv4-compatible, SIIT, NAT64, 6to4,
// Teredo): such a form is judged by the IPv4 address it leads to, because that is what the kernel (or
// a translator on the path) connects to.
//
// Refused: loopback, unspecified (Linux connects 0.0.0.0 to the host itself), link-local (where cloud
// metadata lives), known metadata endpoints, the host's own interface addresses (a service bound to
// 0.0.0.0 answers on eth0's address too), multicast, broadcast and reserved space. Private ranges
// (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) stay allowed: company registries and mirrors live
// there, and such a host is still reached only through a name or address on the domain allow-list.

export type AddressClass =
  | 'loopback'
  | 'unspecified'
  | 'link-local'
  | 'metadata'
  | 'own-interface'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'private'
  | 'public';

const REFUSED: ReadonlySet<AddressClass> = new Set([
  'loopback',
  'unspecified',
  'link-local',
  'metadata',
  'own-interface',
  'multicast',
  'broadcast',
  'reserved',
]);

export interface ClassifiedAddress {
  /** Canonical: dotted-quad IPv4, or compressed lower-case IPv6 without zone id or brackets. */
  readonly address: string;
  readonly family: 4 | 6;
  readonly class: AddressClass;
  readonly refused: boolean;
  /** The IPv4 address an IPv6 form carries, when that address decided the class. */
  readonly embedded?: { readonly form: string; readonly ipv4: string };
}

export interface ClassifyOptions {
  /** This machine's interface addresses; default: os.networkInterfaces(), read at every call. */
  readonly interfaceAddresses?: () => readonly string[];
}

function subnets(family: 'ipv4' | 'ipv6', list: readonly (readonly [string, number])[]): net.BlockList {
  const rules = new net.BlockList();
  for (const [address, prefix] of list) rules.addSubnet(address, prefix, family);
  return rules;
}

// Checked in this order; the first match decides. The host's own addresses are checked between the
// special-purpose ranges and the private ones (eth0 is usually a private address).
const V4_SPECIAL: readonly (readonly [AddressClass, net.BlockList])[] = [
  ['unspecified', subnets('ipv4', [['0.0.0.0', 8]])],
  ['loopback', subnets('ipv4', [['127.0.0.0', 8]])],
  [
    'metadata',
    subnets('ipv4', [
      ['169.254.169.254', 32], // AWS, GCP, Azure, OpenStack…
      ['169.254.170.2', 32], // AWS container credentials
      ['100.100.100.200', 32], // Alibaba Cloud
      ['168.63.129.16', 32], // Azure platform endpoint (outside link-local space)
    ]),
  ],
  ['link-local', subnets('ipv4', [['169.254.0.0', 16]])],
  ['multicast', subnets('ipv4', [['224.0.0.0', 4]])],
  ['broadcast', subnets('ipv4', [['255.255.255.255', 32]])],
  ['reserved', subnets('ipv4', [['240.0.0.0', 4]])],
];
const V4_PRIVATE = subnets('ipv4', [
  ['10.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['100.64.0.0', 10],
]);
const V6_SPECIAL: readonly (readonly [AddressClass, net.BlockList])[] = [
  ['unspecified', subnets('ipv6', [['::', 128]])],
  ['loopback', subnets('ipv6', [['::1', 128]])],
  ['metadata', subnets('ipv6', [['fd00:ec2::254', 128]])], // AWS's IPv6 metadata endpoint
  ['link-local', subnets('ipv6', [['fe80::', 10]])],
  ['multicast', subnets('ipv6', [['ff00::', 8]])],
];
const V6_PRIVATE = subnets('ipv6', [
  ['fc00::', 7],
  ['fec0::', 10], // deprecated site-local: a local network all the same
]);

/** Canonical IPv4 for any spelling WHATWG URL (and so getaddrinfo's inet_aton) turns into an address. */
function canonicalV4(text: string): string | undefined {
  if (net.isIPv4(text)) return text;
  if (!/^[0-9a-fx.]+$/i.test(text)) return undefined;
  try {
    const host = new URL(`http://${text}/`).hostname;
    return net.isIPv4(host) ? host : undefined;
  } catch {
    return undefined;
  }
}

/** The eight 16-bit groups of an IPv6 literal (no zone, no brackets), via WHATWG's canonical form. */
function v6Groups(text: string): number[] | undefined {
  if (!net.isIPv6(text)) return undefined;
  let canonical: string;
  try {
    canonical = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  // The canonical form has at most one `::` and no dotted tail.
  const [head = '', tail] = canonical.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  const groups = [...left, ...zeros, ...right].map((g) => Number.parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
const v6Text = (groups: readonly number[]) =>
  new URL(`http://[${groups.map((g) => g.toString(16)).join(':')}]/`).hostname.slice(1, -1);

/**
 * The IPv4 addresses an IPv6 address carries, with the form's name. `translated` forms (mapped,
 * compatible, SIIT, NAT64) lead to that IPv4 address; tunnel forms (6to4, Teredo) name a tunnel end.
 */
function embeddedV4(g: readonly number[]): { form: string; ipv4: string; translated: boolean }[] {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = g;
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  const found: { form: string; ipv4: string; translated: boolean }[] = [];
  const last = v4Of(g6, g7);
  if (zeroTo(5) && g5 === 0xffff) found.push({ form: 'IPv4-mapped', ipv4: last, translated: true });
  // ::/96 minus :: and ::1, which are IPv6's own unspecified and loopback.
  else if (zeroTo(6) && (g6 !== 0 || g7 > 1))
    found.push({ form: 'IPv4-compatible', ipv4: last, translated: true });
  else if (zeroTo(4) && g4 === 0xffff && g5 === 0)
    found.push({ form: 'IPv4-translated (SIIT)', ipv4: last, translated: true });
  // NAT64: the well-known 64:ff9b::/96 and the local-use 64:ff9b:1::/48 (taken with a /96 prefix,
  // its common deployment; RFC 6052's shorter prefixes put the address elsewhere and are not read).
  else if (g0 === 0x64 && g1 === 0xff9b && (g2 === 1 || g.slice(2, 6).every((x) => x === 0)))
    found.push({ form: 'NAT64', ipv4: last, translated: true });
  if (g0 === 0x2002) found.push({ form: '6to4', ipv4: v4Of(g1 ?? 0, g2 ?? 0), translated: false });
  if (g0 === 0x2001 && g1 === 0) {
    // Teredo: the server in bits 32–63, the client (obfuscated by inverting) in the last 32 bits.
    found.push({ form: 'Teredo server', ipv4: v4Of(g2 ?? 0, g3 ?? 0), translated: false });
    found.push({ form: 'Teredo client', ipv4: v4Of(~g6 & 0xffff, ~g7 & 0xffff), translated: false });
  }
  return found;
}

function ownAddresses(options: ClassifyOptions | undefined): Set<string> {
  const list =
    options?.interfaceAddresses?.() ??
    Object.values(os.networkInterfaces()).flatMap((infos) => (infos ?? []).map((i) => i.address));
  const own = new Set<string>();
  for (const address of list) {
    const bare = address.replace(/%.*$/, '');
    const v4 = canonicalV4(bare);
    const groups = v4 ? undefined : v6Groups(bare);
    if (v4) own.add(v4);
    else if (groups) own.add(v6Text(groups));
  }
  return own;
}

function classifyV4(address: string, own: Set<string>): AddressClass {
  for (const [cls, rules] of V4_SPECIAL) if (rules.check(address, 'ipv4')) return cls;
  if (own.has(address)) return 'own-interface';
  return V4_PRIVATE.check(address, 'ipv4') ? 'private' : 'public';
}

/**
 * The class of an IP literal in any spelling; undefined when `text` is not one (a host name — resolve
 * it and classify each address the resolver returns).
 */
export function classifyAddress(text: string, options?: ClassifyOptions): ClassifiedAddress | undefined {
  const bare = text
    .trim()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/%.*$/, '')
    .toLowerCase();
  const v4 = bare.includes(':') ? undefined : canonicalV4(bare);
  if (v4) {
    const cls = classifyV4(v4, ownAddresses(options));
    return { address: v4, family: 4, class: cls, refused: REFUSED.has(cls) };
  }
  const groups = v6Groups(bare);
  if (!groups) return undefined;
  const address = v6Text(groups);
  const own = ownAddresses(options);
  for (const carried of embeddedV4(groups)) {
    const cls = classifyV4(carried.ipv4, own);
    if (REFUSED.has(cls) || carried.translated)
      return {
        address,
        family: 6,
        class: cls,
        refused: REFUSED.has(cls),
        embedded: { form: carried.form, ipv4: carried.ipv4 },
      };
  }
  let cls: AddressClass = 'public';
  const special = V6_SPECIAL.find(([, rules]) => rules.check(address, 'ipv6'));
  if (special) cls = special[0];
  else if (own.has(address)) cls = 'own-interface';
  else if (V6_PRIVATE.check(address, 'ipv6')) cls = 'private';
  return { address, family: 6, class: cls, refused: REFUSED.has(cls) };
}

/** The one line a refused client (403 body), the model and the audit read. */
export function describeRefusal(host: string, c: ClassifiedAddress): string {
  const shown = c.embedded ? `${c.embedded.ipv4}, written as ${c.embedded.form} ${c.address}` : c.address;
  switch (c.class) {
    case 'loopback':
    case 'unspecified':
      return `${host} is an address of this machine (${shown}); sandboxed commands never reach the host's own services`;
    case 'own-interface':
      return `${host} is an address of this machine (${shown}, one of its network interfaces); sandboxed commands never reach the host's own services`;
    case 'link-local':
      return `${host} is a link-local address (${shown}), where cloud metadata and the local link's devices answer; sandboxed commands never reach it`;
    case 'metadata':
      return `${host} is a cloud metadata endpoint (${shown}); sandboxed commands never reach it`;
    default:
      return `${host} is a ${c.class} address (${shown}); the proxy connects only to unicast addresses off this machine`;
  }
}
