// A seccomp filter as a classic BPF program, generated in JS and handed to bwrap on a file
// descriptor (`bwrap --seccomp FD`): no native module, no build step. It refuses the two ways a
// confined command could reach outside its mount and network namespaces that bwrap alone leaves open:
// - socket(AF_UNIX, …): a host Unix-domain socket (docker.sock, ssh-agent, D-Bus, VS Code's IPC) is
//   reachable through a read-only bind of `/`; socketpair() stays allowed (pipes between children);
// - io_uring_*: its operations bypass seccomp's per-syscall checks.
// Foreign ABIs are refused wholesale (x32 on x86-64, the 32-bit compat table): their syscall numbers
// differ, and i386's socketcall() multiplexes socket() past the check.

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_RET_K = 0x06;

const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const AF_UNIX = 1;

// struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16;

interface ArchTable {
  readonly audit: number;
  readonly socket: number;
  readonly ioUring: readonly number[];
  /** Syscall numbers at or above this belong to another ABI (x32). */
  readonly foreignFrom?: number;
}

const ARCHES: Readonly<Record<string, ArchTable>> = {
  x64: { audit: 0xc000003e, socket: 41, ioUring: [425, 426, 427], foreignFrom: 0x40000000 },
  arm64: { audit: 0xc00000b7, socket: 198, ioUring: [425, 426, 427] },
};

type Insn = { code: number; jt: number | string; jf: number | string; k: number } | { label: string };

/** The filter for this CPU architecture, or undefined where Keel has no syscall table for it. */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  const table = ARCHES[arch];
  if (!table) return undefined;
  const ld = (offset: number): Insn => ({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: offset });
  const jeq = (k: number, jt: number | string, jf: number | string): Insn => ({ code: BPF_JEQ_K, jt, jf, k });
  const ret = (k: number): Insn => ({ code: BPF_RET_K, jt: 0, jf: 0, k });
  const program: Insn[] = [
    ld(OFFSET_ARCH),
    jeq(table.audit, 0, 'eperm'),
    ld(OFFSET_NR),
    ...(table.foreignFrom !== undefined
      ? [{ code: BPF_JGE_K, jt: 'eperm', jf: 0, k: table.foreignFrom } as Insn]
      : []),
    ...table.ioUring.map((nr) => jeq(nr, 'enosys', 0)),
    jeq(table.socket, 0, 'allow'),
    ld(OFFSET_ARG0_LOW),
    jeq(AF_UNIX, 'eperm', 'allow'),
    { label: 'allow' },
    ret(SECCOMP_RET_ALLOW),
    { label: 'eperm' },
    ret(SECCOMP_RET_ERRNO | EPERM),
    { label: 'enosys' },
    ret(SECCOMP_RET_ERRNO | ENOSYS),
  ];
  return assemble(program);
}

function assemble(program: readonly Insn[]): Buffer {
  const labels = new Map<string, number>();
  const insns: Exclude<Insn, { label: string }>[] = [];
  for (const item of program) {
    if ('label' in item) labels.set(item.label, insns.length);
    else insns.push(item);
  }
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, index) => {
    // Jumps are relative to the next instruction and only go forward.
    const offset = (target: number | string) =>
      typeof target === 'number' ? target : (labels.get(target) as number) - index - 1;
    out.writeUInt16LE(insn.code, index * 8);
    out.writeUInt8(offset(insn.jt), index * 8 + 2);
    out.writeUInt8(offset(insn.jf), index * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, index * 8 + 4);
  });
  return out;
}
