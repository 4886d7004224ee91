/**
 * The layout for `unshapedSubnets` / `shapedSubnets` (subnets.ts), on the device that shapes one
 * direction (the shaped device's root, or its IFB: site.ts):
 *
 *   htb 1: root, default 1:30 (unshapedSubnets) or 1:1 (shapedSubnets)
 *   ├─ class 1:30  the limit: rate = ceil = the configured rate, buffer = cbuffer = the TBF bucket
 *   ├─ class 1:1   uncapped: rate = ceil = 100 Gbit/s
 *   └─ u32 filters on 1:, one per prefix (prio 16 protocol ip / prio 15 protocol ipv6), matching
 *      the peer address (src for ingress, dst for egress) → flowid 1:1 or 1:30
 *
 * Handles, class ids, priorities and the uncapped rate are those of upstream v1.5 (reverted). Unlike
 * v1.5: ceil is the rate (v1.5 let shaped traffic borrow up to 2 × rate), and both classes carry an
 * explicit quantum within the kernel's bounds (v1.5's 100 Gbit class made the kernel log
 * "quantum of class 10001 is big", one of the reasons for the revert).
 */
import { InternalError } from "../../shared/cni/errors.ts";
import { annotate } from "../../shared/error/annotate.ts";
import type { Handle } from "../../shared/netlink/handle.ts";
import type { Link } from "../../shared/netlink/link.ts";
import type { Qdisc } from "../../shared/netlink/tc/qdisc.ts";
import type { U32Key } from "../../shared/netlink/tc/filter.ts";
import { ETH_P_IP, ETH_P_IPV6 } from "../../shared/netlink/constants/pkt-cls.ts";
import { parseHtbDefaultClass } from "../../shared/netlink/tc/htb.ts";
import { formatTcHandle, tcHandle } from "../../shared/netlink/tc/msg.ts";
import { u32PrefixKeys } from "../../shared/netlink/tc/u32-match.ts";
import type { Prefix, SubnetSelection } from "./subnets.ts";
import { bufferTicks, type TbfNumbers } from "./tbf-params.ts";

/** The HTB root handle (`1:`, as the TBF's). */
export const HTB_HANDLE = tcHandle(1, 0);
/** Class minors (upstream v1.5 ShapedClassMinorID / UnShapedClassMinorID): `1:30` and `1:1`. */
export const SHAPED_MINOR = 0x30;
export const UNSHAPED_MINOR = 1;
/** The uncapped class's rate: 100 Gbit/s in bytes/s (upstream v1.5 UncappedRate). */
export const UNCAPPED_RATE = 100_000_000_000 / 8;
/** The uncapped class's bucket in bytes (one 64 KiB GSO packet). */
const UNCAPPED_BURST = 65536;
/** Filter priorities (one u32 instance per protocol; the kernel refuses two protocols at one prio). */
const PRIO_V4 = 16;
const PRIO_V6 = 15;
/** The kernel's bounds for an HTB quantum (sch_htb.c); outside them it logs and clamps. */
const QUANTUM_MIN = 1000;
const QUANTUM_MAX = 200000;

/** The kernel's default quantum (rate / r2q with r2q 10), clamped to its bounds, set explicitly. */
export function quantumFor(rateBytes: number): number {
  return Math.min(QUANTUM_MAX, Math.max(QUANTUM_MIN, Math.floor(rateBytes / 10)));
}

/** Which peer address a direction matches: ingress (towards the container) src, egress dst. */
export type PeerField = "src" | "dst";

/** The u32 filter of one prefix, as our signature for CHECK. */
interface WantedFilter {
  priority: number;
  protocol: number;
  classId: number;
  keys: U32Key[];
}

function defaultMinor(s: SubnetSelection): number {
  return s.mode === "unshaped" ? SHAPED_MINOR : UNSHAPED_MINOR;
}

function wantedFilter(p: Prefix, s: SubnetSelection, field: PeerField): WantedFilter {
  const v4 = p.bytes.byteLength === 4;
  return {
    priority: v4 ? PRIO_V4 : PRIO_V6,
    protocol: v4 ? ETH_P_IP : ETH_P_IPV6,
    classId: tcHandle(1, s.mode === "unshaped" ? UNSHAPED_MINOR : SHAPED_MINOR),
    keys: u32PrefixKeys(p.bytes, p.prefixLen, field),
  };
}

/** Whether a root qdisc is one this plugin makes (TBF or HTB at `1:`). */
export function isOurRoot(q: Qdisc | undefined): boolean {
  return q !== undefined && (q.kind === "tbf" || q.kind === "htb") && q.handle === HTB_HANDLE;
}

/**
 * `tc qdisc add dev X root handle 1: htb default D`, the two classes and one filter per prefix.
 * A leftover root of ours (TBF or HTB `1:`) is deleted first.
 */
export function setupHtb(nl: Handle, index: number, current: Qdisc | undefined, n: TbfNumbers, s: SubnetSelection, field: PeerField, errPrefix: string): void {
  annotate(errPrefix, () => {
    if (isOurRoot(current)) nl.qdiscDel(index, "root");
    nl.qdiscHtb("add", { index, handle: HTB_HANDLE, defaultClass: defaultMinor(s), r2q: 10 });
    nl.classHtb("add", {
      index,
      classId: tcHandle(1, SHAPED_MINOR),
      parent: HTB_HANDLE,
      rate: n.rate,
      ceil: n.rate,
      buffer: n.buffer,
      cbuffer: n.buffer,
      quantum: quantumFor(n.rate),
    });
    const uncapped = bufferTicks(UNCAPPED_RATE, UNCAPPED_BURST);
    nl.classHtb("add", {
      index,
      classId: tcHandle(1, UNSHAPED_MINOR),
      parent: HTB_HANDLE,
      rate: UNCAPPED_RATE,
      ceil: UNCAPPED_RATE,
      buffer: uncapped,
      cbuffer: uncapped,
      quantum: QUANTUM_MAX,
    });
    for (const p of s.prefixes) nl.filterAddU32({ index, parent: HTB_HANDLE, ...wantedFilter(p, s, field) });
  });
}

function signature(f: WantedFilter): string {
  return [f.priority, f.protocol, f.classId, ...f.keys.map((k) => `${k.off}:${k.mask}:${k.value & k.mask}`)].join(" ");
}

/** CHECK: the HTB root, its default class, both classes' numbers and exactly the wanted filters. */
export function checkHtb(nl: Handle, dev: Link, root: Qdisc | undefined, n: TbfNumbers, s: SubnetSelection, field: PeerField): void {
  if (root === undefined || root.kind === "noqueue") throw new InternalError("Failed to find qdisc");
  if (root.kind !== "htb") throw new InternalError(`Failed to find htb qdisc on ${dev.name} (found ${root.kind})`);
  if (root.handle !== HTB_HANDLE) throw new InternalError(`htb qdisc on ${dev.name} is not 1:`);
  if (root.options === undefined || parseHtbDefaultClass(root.options) !== defaultMinor(s)) throw new InternalError("Default class does not match");

  const classes = nl.classList(dev.index).filter((c) => c.kind === "htb" && (c.handle & 0xffff0000) === HTB_HANDLE);
  if (classes.length !== 2) throw new InternalError(`Number of htb classes does not match for device ${dev.name} (${classes.length} != 2)`);
  const shaped = classes.find((c) => c.handle === tcHandle(1, SHAPED_MINOR))?.htb;
  const uncapped = classes.find((c) => c.handle === tcHandle(1, UNSHAPED_MINOR))?.htb;
  if (shaped === undefined || uncapped === undefined) throw new InternalError(`htb classes on ${dev.name} are not 1:30 and 1:1`);
  if (shaped.rate !== n.rate || shaped.ceil !== n.rate) throw new InternalError("Rate doesn't match");
  if (shaped.buffer !== n.buffer || shaped.cbuffer !== n.buffer) throw new InternalError("Buffer doesn't match");
  if (uncapped.rate !== UNCAPPED_RATE) {
    throw new InternalError(`Rate does not match for the uncapped class for device ${dev.name} (${uncapped.rate} != ${UNCAPPED_RATE})`);
  }

  const found = nl.filterList(dev.index, HTB_HANDLE)
    .filter((f) => f.kind === "u32" && f.keys !== undefined)
    .map((f) => signature({ priority: f.priority, protocol: f.protocol, classId: f.classId ?? 0, keys: f.keys ?? [] }))
    .sort();
  const wanted = s.prefixes.map((p) => signature(wantedFilter(p, s, field))).sort();
  if (found.join("\n") !== wanted.join("\n")) {
    throw new InternalError(`subnet filters on ${dev.name} (parent ${formatTcHandle(HTB_HANDLE)}) do not match the configured ${s.mode}Subnets`);
  }
}
