/** agent/peer.ts: whom the agent serves, judged on /proc contents made up here (and once on its own). */
import { describe, expect, test } from "bun:test";
import { EACCES, EINVAL, SyscallError } from "../shared/sys/errno.ts";
import type { PeerCredentials } from "../shared/sys/process.ts";
import { agentSelf, parsePrivilege, refusalFor, type Identity, type ProcFacts } from "./peer.ts";

const CALLER = 4242;
/** The caller's parent, the container runtime: started before the agent. */
const RUNTIME = 300;
/** The agent in the made-up tree: its pid is the test process's (agentSelf takes process.pid), started at tick 5000. */
const AGENT_STARTED = 5000;
const ALL_CAPS = "000001ffffffffff";

/** A /proc/<pid>/status as Linux 6.x writes it, with the fields that bear on privilege set. */
function status(o: { eff?: string; prm?: string; bnd?: string; nnp?: 0 | 1; seccomp?: 0 | 1 | 2; groups?: string; fsgid?: number; parent?: number } = {}): string {
  return [
    "Name:\tcni-plugins-shi",
    "Umask:\t0022",
    "State:\tS (sleeping)",
    `Tgid:\t${CALLER}`,
    `PPid:\t${o.parent ?? RUNTIME}`,
    "Uid:\t0\t0\t0\t0",
    `Gid:\t0\t0\t0\t${o.fsgid ?? 0}`,
    "FDSize:\t64",
    `Groups:\t${o.groups ?? ""}`,
    "VmRSS:\t     716 kB",
    "CapInh:\t0000000000000000",
    `CapPrm:\t${o.prm ?? ALL_CAPS}`,
    `CapEff:\t${o.eff ?? ALL_CAPS}`,
    `CapBnd:\t${o.bnd ?? ALL_CAPS}`,
    "CapAmb:\t0000000000000000",
    `NoNewPrivs:\t${o.nnp ?? 0}`,
    `Seccomp:\t${o.seccomp ?? 0}`,
    `Seccomp_filters:\t${o.seccomp === 2 ? 1 : 0}`,
    "Speculation_Store_Bypass:\tvulnerable",
    "Cpus_allowed_list:\t0-1",
    "",
  ].join("\n");
}

const id = (ino: bigint) => `ns:[${ino}]`;
/** The agent's namespaces and root; a caller gets the same unless a test says otherwise. */
const HOST: Identity = { user: id(1n), net: id(2n), root: { dev: 0xfe00n, ino: 2n }, rootMount: 22n };

/** A process as /proc shows it: attr files map to their text, or to the errno reading them fails with. */
interface FakeProcess {
  identity?: Partial<Identity>;
  mountNamespace?: string;
  status?: string;
  attr?: Record<string, string | number>;
}

/** /proc with the agent ("self") and one caller; records which attr files of the caller were read. */
function fakeProc(agent: FakeProcess, caller: FakeProcess, lsmFiles = ["current"]): ProcFacts & { callerReads: string[] } {
  const callerReads: string[] = [];
  const of = (pid: number | "self") => (pid === "self" ? agent : pid === CALLER ? caller : undefined);
  const must = (pid: number | "self") => of(pid) ?? (() => { throw new SyscallError("open", 2, `/proc/${pid}`); })();
  return {
    callerReads,
    identity: (pid) => ({ ...HOST, ...must(pid).identity }),
    mountNamespace: (pid) => must(pid).mountNamespace ?? id(3n),
    status: (pid) => must(pid).status ?? status(),
    attr: (pid, file) => {
      if (pid === CALLER) callerReads.push(file);
      const value = must(pid).attr?.[file] ?? EINVAL;
      if (typeof value === "number") throw new SyscallError("read", value, `/proc/${pid}/attr/${file}`);
      return value;
    },
    lsmFiles: () => lsmFiles,
    // The runtime started before the agent; a process started after it is its child.
    lineage: (pid) => (pid === process.pid ? { parent: 1, started: AGENT_STARTED } : pid === RUNTIME ? { parent: 1, started: 100 } : { parent: process.pid, started: AGENT_STARTED + pid }),
  };
}

const ROOT: PeerCredentials = { pid: CALLER, uid: 0, gid: 0 };

/** Why `caller` is refused by `agent` ("" when served). */
function judge(agent: FakeProcess, caller: FakeProcess, opts: { lsmFiles?: string[]; cred?: Partial<PeerCredentials>; ids?: { uid: number; gid: number } } = {}): string {
  const proc = fakeProc(agent, caller, opts.lsmFiles);
  const self = agentSelf(proc, opts.ids ?? { uid: 0, gid: 0 });
  return refusalFor(7, CALLER, self, () => ({ ...ROOT, ...opts.cred }), proc)?.text ?? "";
}

describe("refusalFor: credentials", () => {
  test("the kernel's pid must be the one the caller sent; no credentials is a refusal", () => {
    const proc = fakeProc({}, {});
    const self = agentSelf(proc, { uid: 0, gid: 0 });
    expect(refusalFor(7, CALLER + 1, self, () => ROOT, proc)?.text).toBe(`the caller says pid ${CALLER + 1}, the kernel says ${CALLER}`);
    expect(refusalFor(7, CALLER, self, () => { throw new SyscallError("getsockopt", 9, "fd=7"); }, proc)?.text).toStartWith("no peer credentials: getsockopt fd=7");
  });

  test("root or the agent's user; the agent's group", () => {
    expect(judge({}, {})).toBe("");
    expect(judge({}, {}, { cred: { uid: 1000, gid: 1000 }, ids: { uid: 1000, gid: 1000 } })).toBe("");
    expect(judge({}, {}, { cred: { uid: 1001 }, ids: { uid: 1000, gid: 0 } })).toBe("uid 1001 is neither root nor the agent's (1000)");
    expect(judge({}, {}, { cred: { gid: 27 } })).toBe("gid 27 is not the agent's (0)");
  });
});

describe("refusalFor: namespaces and root", () => {
  test("another user, network or mount namespace", () => {
    expect(judge({}, { identity: { user: id(91n) } })).toBe(`pid ${CALLER} is in another user namespace`);
    expect(judge({}, { identity: { net: id(92n) } })).toBe(`pid ${CALLER} is in another network namespace`);
    // Another mount namespace has its own copy of every mount: another root mount (ns/mnt then says why).
    expect(judge({}, { identity: { rootMount: 93n }, mountNamespace: id(93n) })).toBe(`pid ${CALLER} is in another mount namespace`);
  });

  test("a root of another mount with the same device and inode (a bind mount of /) is another root", () => {
    expect(judge({}, { identity: { root: { dev: 0xfe00n, ino: 77n } } })).toBe(`pid ${CALLER} has another root directory`);
    expect(judge({}, { identity: { rootMount: 1234n } })).toBe(`pid ${CALLER} has another root directory (mount 1234, the agent's 22: a bind mount of it)`);
  });

  test("a kernel that reports no mount ids cannot tell such a root from the agent's: every caller is refused", () => {
    expect(judge({ identity: { rootMount: undefined } }, { identity: { rootMount: undefined } })).toContain("the kernel does not report mount ids (STATX_MNT_ID");
  });

  test("a caller that cannot be examined (gone, or its status unreadable) is refused", () => {
    const proc = fakeProc({}, {});
    const self = agentSelf(proc, { uid: 0, gid: 0 });
    expect(refusalFor(7, 99, self, () => ({ ...ROOT, pid: 99 }), proc)?.text).toBe("pid 99 cannot be examined: open /proc/99: no such file or directory (ENOENT)");
    expect(judge({}, { status: "Name:\tx\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t0\n" })).toBe(`pid ${CALLER} cannot be examined: no CapPrm line in the status`);
    expect(judge({}, { status: status({ eff: "zz" }) })).toBe(`pid ${CALLER} cannot be examined: CapEff "zz" in the status`);
  });
});

describe("refusalFor: capabilities, groups, no_new_privs, seccomp", () => {
  const AGENT_CAPS = "000001fffeffffff"; // all but CAP_SYS_RESOURCE (bit 24), as on the machine the tests were written on
  const agent = { status: status({ eff: AGENT_CAPS, prm: AGENT_CAPS, bnd: AGENT_CAPS }) };

  test("equal sets, or a superset in each (a caller with more than the agent), are served", () => {
    expect(judge(agent, agent)).toBe("");
    expect(judge(agent, { status: status() })).toBe("");
  });

  test("one capability missing from any of the effective, permitted and bounding sets is refused, naming the set", () => {
    const fewer = "000001fffefffffe"; // no CAP_CHOWN
    expect(judge(agent, { status: status({ eff: fewer, prm: AGENT_CAPS, bnd: AGENT_CAPS }) })).toBe(
      `pid ${CALLER} has fewer capabilities than the agent (CapEff ${fewer}, the agent ${AGENT_CAPS})`,
    );
    expect(judge(agent, { status: status({ eff: AGENT_CAPS, prm: fewer, bnd: AGENT_CAPS }) })).toContain(`(CapPrm ${fewer}, the agent ${AGENT_CAPS})`);
    expect(judge(agent, { status: status({ eff: AGENT_CAPS, prm: AGENT_CAPS, bnd: fewer }) })).toContain(`(CapBnd ${fewer}, the agent ${AGENT_CAPS})`);
    // setpriv --inh-caps=-all --bounding-set=-all: root with nothing.
    expect(judge(agent, { status: status({ eff: "0000000000000000", prm: "0000000000000000", bnd: "0000000000000000" }) })).toBe(
      `pid ${CALLER} has fewer capabilities than the agent (CapEff 0000000000000000, the agent ${AGENT_CAPS})`,
    );
  });

  test("as many capabilities but others (not a superset) is refused", () => {
    expect(judge(agent, { status: status({ eff: "000001ffff7fffff", prm: AGENT_CAPS, bnd: AGENT_CAPS }) })).toContain("has fewer capabilities than the agent (CapEff 000001ffff7fffff");
  });

  test("supplementary groups: a superset is served, a missing one refused", () => {
    const withGroups = { status: status({ groups: "4 27" }) };
    expect(judge(withGroups, { status: status({ groups: "4 27 100" }) })).toBe("");
    expect(judge(withGroups, { status: status({ groups: "27" }) })).toBe(`pid ${CALLER} lacks supplementary groups of the agent (4)`);
    expect(judge({}, { status: status({ groups: "4" }) })).toBe("");
  });

  test("the group a caller's file access is checked as counts as one of its groups (an agent in a container lists its own)", () => {
    const inContainer = { status: status({ groups: "0" }) };
    expect(judge(inContainer, { status: status({ groups: "" }) })).toBe("");
    expect(judge(inContainer, { status: status({ groups: "", fsgid: 5 }) })).toBe(`pid ${CALLER} lacks supplementary groups of the agent (0)`);
  });

  test("no_new_privs: refused unless the agent has it too", () => {
    expect(judge({}, { status: status({ nnp: 1 }) })).toBe(`pid ${CALLER} runs with no_new_privs, the agent does not`);
    expect(judge({ status: status({ nnp: 1 }) }, { status: status({ nnp: 1 }) })).toBe("");
    expect(judge({ status: status({ nnp: 1 }) }, { status: status({ nnp: 0 }) })).toBe("");
  });

  test("seccomp: a caller in strict or filter mode is refused, even when the agent has a filter too", () => {
    expect(judge({}, { status: status({ seccomp: 2 }) })).toBe(`pid ${CALLER} is confined by seccomp (mode 2), which cannot be compared with the agent's`);
    expect(judge({}, { status: status({ seccomp: 1 }) })).toContain("(mode 1)");
    expect(judge({ status: status({ seccomp: 2 }) }, { status: status({ seccomp: 2 }) })).toContain("(mode 2)");
    expect(judge({ status: status({ seccomp: 2 }) }, { status: status({ seccomp: 0 }) })).toBe("");
  });
});

describe("refusalFor: LSM contexts", () => {
  const AA_FILES = ["current", "apparmor/current"];
  const aa = (context: string) => ({ attr: { current: `${context}\n`, "apparmor/current": `${context}\n` } });

  test("no LSM (attr/current fails with EINVAL for the agent): no context on either side, the caller's is not read", () => {
    const proc = fakeProc({}, { attr: { current: "would differ" } });
    expect(refusalFor(7, CALLER, agentSelf(proc, { uid: 0, gid: 0 }), () => ROOT, proc)).toBeUndefined();
    expect(proc.callerReads).toEqual([]);
  });

  test("equal contexts are served, other ones refused (SELinux-like attr/current)", () => {
    const agent = { attr: { current: "system_u:system_r:kubelet_t:s0\0" } };
    expect(judge(agent, agent)).toBe("");
    expect(judge(agent, { attr: { current: "system_u:system_r:container_t:s0:c1,c2\0" } })).toBe(
      `pid ${CALLER} has another LSM context in attr/current ("system_u:system_r:container_t:s0:c1,c2", the agent "system_u:system_r:kubelet_t:s0")`,
    );
  });

  test("AppArmor: the same profile is served, another refused; an unconfined caller holds any profile", () => {
    expect(judge(aa("cni-agent (enforce)"), aa("cni-agent (enforce)"), { lsmFiles: AA_FILES })).toBe("");
    expect(judge(aa("cni-agent (enforce)"), aa("unconfined"), { lsmFiles: AA_FILES })).toBe("");
    expect(judge(aa("unconfined"), aa("cni-caller (complain)"), { lsmFiles: AA_FILES })).toBe(
      `pid ${CALLER} has another LSM context in attr/current ("cni-caller (complain)", the agent "unconfined")`,
    );
    expect(judge(aa("cni-agent (enforce)"), aa("cni-agent (complain)"), { lsmFiles: AA_FILES })).toContain("another LSM context");
  });

  test("AppArmor: only exactly 'unconfined' holds every profile (not a policy namespace's, not an unconfined stack)", () => {
    for (const label of [":ns:unconfined", ":ns://unconfined", "unconfined//&cni-caller (enforce)"]) {
      expect(judge(aa("cni-agent (enforce)"), aa(label), { lsmFiles: AA_FILES })).toContain("another LSM context in attr/current");
    }
  });

  test("'unconfined' is AppArmor's word only: in a file no AppArmor answers it is just another context", () => {
    const selinux = { attr: { current: "system_u:system_r:kubelet_t:s0\0", "apparmor/current": EINVAL } };
    expect(judge(selinux, { attr: { current: "unconfined\n" } }, { lsmFiles: AA_FILES })).toContain("another LSM context in attr/current");
    const smack = { attr: { "smack/current": "cni" } };
    expect(judge(smack, { attr: { "smack/current": "unconfined" } }, { lsmFiles: ["current", "smack/current"] })).toBe(
      `pid ${CALLER} has another LSM context in attr/smack/current ("unconfined", the agent "cni")`,
    );
  });

  test("a file the agent reads but the caller's cannot be read is refused", () => {
    expect(judge(aa("cni-agent (enforce)"), { attr: { current: "cni-agent (enforce)\n", "apparmor/current": EACCES } }, { lsmFiles: AA_FILES })).toBe(
      `pid ${CALLER}'s attr/apparmor/current cannot be read (EACCES), the agent's can`,
    );
  });

  test("a file the agent cannot read either (another errno than EINVAL) must fail alike for the caller", () => {
    const agent = { attr: { "smack/current": EACCES } };
    expect(judge(agent, { attr: { "smack/current": EACCES } }, { lsmFiles: ["current", "smack/current"] })).toBe("");
    expect(judge(agent, { attr: { "smack/current": "cni" } }, { lsmFiles: ["current", "smack/current"] })).toBe(
      `pid ${CALLER} has another LSM context in attr/smack/current ("cni", the agent EACCES)`,
    );
  });
});

describe("refusalFor: nested calls", () => {
  test("a caller whose parent is the agent, or descends from it, is refused; one whose parent started before the agent is served", () => {
    expect(judge({}, { status: status({ parent: process.pid }) })).toBe(`pid ${CALLER} is a process this agent started (a nested call runs standalone)`);
    expect(judge({}, { status: status({ parent: 7777 }) })).toBe(`pid ${CALLER} is a process this agent started (a nested call runs standalone)`); // 7777's parent is the agent
    expect(judge({}, { status: status({ parent: RUNTIME }) })).toBe("");
  });
});

describe("agentSelf and parsePrivilege on this process", () => {
  test("the agent serves itself, and reads what /proc/self/status says", () => {
    const self = agentSelf();
    const me = { pid: process.pid, uid: process.geteuid!(), gid: process.getegid!() };
    expect(refusalFor(7, process.pid, self, () => me)).toBeUndefined();
    expect(self.identity.rootMount).toBeGreaterThan(0n); // this kernel reports mount ids
    expect(self.lsm.get("current")).toBeDefined();
    const text = require("node:fs").readFileSync("/proc/self/status", "utf8") as string;
    const line = (name: string) => text.split("\n").find((l) => l.startsWith(`${name}:`))!.split(":")[1]!.trim();
    expect(parsePrivilege(text)).toEqual({
      caps: { CapEff: BigInt(`0x${line("CapEff")}`), CapPrm: BigInt(`0x${line("CapPrm")}`), CapBnd: BigInt(`0x${line("CapBnd")}`) },
      noNewPrivs: line("NoNewPrivs") === "1",
      seccomp: Number(line("Seccomp")),
      groups: line("Groups") === "" ? [] : line("Groups").split(/\s+/).map(Number),
      parent: Number(line("PPid")),
      fsgid: Number(line("Gid").split(/\s+/)[3]),
    });
  });
});
