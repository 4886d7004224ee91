/**
 * Golden bytes for the tc request builders (qdisc.ts, htb.ts, filter.ts, action.ts) against what
 * iproute2's `tc` sent (test/fixtures/netlink/tc-iproute2-requests.json); nlmsg_seq and nlmsg_pid
 * (bytes 8..15) are ignored. The rate table is also checked on its own, for each captured TBF.
 *
 * Captured inside `unshare -n` with veth va/vb, ifb bwtest and veth vc/vd, running each command as
 * `strace -f -e trace=sendmsg,sendto -e write=3 -x tc ...` and keeping the last sendmsg buffer
 * (for the HTB, class and prefix-match cases: every iov buffer of the last sendmsg; see the
 * fixture's `capture_htb`).
 */
import { describe, expect, test } from "bun:test";
import fixtures from "../../../test/fixtures/netlink/tc-iproute2-requests.json";
import { attrMap, buildMessage, fromHex, readU32, toHex } from "../codec.ts";
import { ETH_P_ALL } from "../constants/pkt-cls.ts";
import { TCA_OPTIONS, TCA_TBF_RTAB, TCMSG_SIZE, TC_H_INGRESS, TC_H_MIN_INGRESS } from "../constants/pkt-sched.ts";
import { RTM_NEWTFILTER } from "../constants/rtnetlink.ts";
import { TCA_EGRESS_REDIR } from "../constants/tc-act.ts";
import { buildFilterDelRequest, buildFilterDumpRequest, buildU32FilterAddRequest, filterInfo, parseFilter } from "./filter.ts";
import { formatTcHandle, tcHandle, writeTcmsg } from "./msg.ts";
import {
  buildClsactQdiscAddRequest,
  buildIngressQdiscRequest,
  buildQdiscDelRequest,
  buildQdiscDumpRequest,
  buildTbfRequest,
  parseQdisc,
  INGRESS_HANDLE,
} from "./qdisc.ts";
import { calcRateTable, parsePsched, xmitTime } from "./rate-table.ts";
import { buildClassDumpRequest, buildHtbClassRequest, buildHtbQdiscRequest, parseClass, parseHtbDefaultClass } from "./htb.ts";
import { u32PrefixKeys } from "./u32-match.ts";
import { ETH_P_IP, ETH_P_IPV6 } from "../constants/pkt-cls.ts";
import { ipToBytes, parseIP } from "../../ip/addr.ts";

const cases = fixtures.cases as Record<string, { command: string; ok: boolean; hex: string }>;
const idx = fixtures.context.ifindex;
const TICK = parsePsched("000003e8 00000040 000f4240 3b9aca00");

/**
 * tc's TBF for `rate R bit burst B limit L`: bytes/s, TCA_TBF_BURST = B, and the buffer in ticks,
 * which tc computes from the rate clamped to 32 bits (tc_tbf_qopt.rate.rate).
 */
function tcTbf(index: number, rateBits: number, burst: number, limit: number) {
  const rate = rateBits / 8;
  return { index, rate, burst, limit, buffer: xmitTime(Math.min(rate, 0xffffffff), burst, TICK) };
}

const ingressClass = tcHandle(1, 1);

/**
 * tc's HTB class for `rate R bit ceil R bit burst B cburst B quantum Q`: buckets in ticks, which tc
 * computes from the full 64-bit rate (unlike TBF's, from the rate clamped to 32 bits).
 */
function tcHtbClass(index: number, minor: number, rateBits: number, burst: number, quantum: number) {
  const rate = rateBits / 8;
  const buffer = xmitTime(rate, burst, TICK);
  return { index, classId: tcHandle(1, minor), parent: tcHandle(1, 0), rate, ceil: rate, buffer, cbuffer: buffer, quantum };
}

/** `tc filter add dev va parent 1: protocol P prio N u32 match ip|ip6 src|dst PREFIX flowid 1:1`. */
function tcPrefixFilter(prefix: string, field: "src" | "dst") {
  const [addr, len] = prefix.split("/");
  const bytes = ipToBytes(parseIP(addr!)!);
  const v4 = bytes.byteLength === 4;
  return buildU32FilterAddRequest({
    index: idx.va,
    parent: tcHandle(1, 0),
    priority: v4 ? 16 : 15,
    protocol: v4 ? ETH_P_IP : ETH_P_IPV6,
    classId: tcHandle(1, 1),
    keys: u32PrefixKeys(bytes, Number(len), field),
  });
}
const ours: Record<string, () => Uint8Array> = {
  "tbf-800k": () => buildTbfRequest("add", tcTbf(idx.va, 800000, 10000, 12500)),
  "tbf-replace-1m": () => buildTbfRequest("replace", tcTbf(idx.va, 1000000, 3000, 6125)),
  "qdisc-del-root": () => buildQdiscDelRequest(idx.va, "root"),
  "tbf-8000": () => buildTbfRequest("add", tcTbf(idx.va, 8000, 10, 35)),
  "tbf-40g": () => buildTbfRequest("add", tcTbf(idx.vc, 40000000000, 1000000, 126000000)),
  "ingress-add": () => buildIngressQdiscRequest("add", idx.va),
  "filter-add": () =>
    buildU32FilterAddRequest({
      index: idx.va,
      parent: INGRESS_HANDLE,
      priority: 1,
      protocol: ETH_P_ALL,
      classId: ingressClass,
      actions: [{ kind: "mirred", ifindex: idx.bwtest }],
    }),
  "qdisc-show": () => buildQdiscDumpRequest(),
  "filter-show": () => buildFilterDumpRequest(idx.va, INGRESS_HANDLE),
  "filter-del": () => buildFilterDelRequest(idx.va, INGRESS_HANDLE, 1, ETH_P_ALL),
  "qdisc-del-ingress": () => buildQdiscDelRequest(idx.va, "ingress"),
  "clsact-add": () => buildClsactQdiscAddRequest(idx.vd),
  "filter-add-clsact": () =>
    buildU32FilterAddRequest({
      index: idx.vd,
      parent: tcHandle(0xffff, TC_H_MIN_INGRESS),
      priority: 1,
      protocol: ETH_P_ALL,
      classId: ingressClass,
      actions: [{ kind: "mirred", ifindex: idx.bwtest, eaction: TCA_EGRESS_REDIR }],
    }),
  "htb-root-default-30": () => buildHtbQdiscRequest("add", { index: idx.va, defaultClass: 0x30, r2q: 10 }),
  "htb-root-default-1": () => buildHtbQdiscRequest("replace", { index: idx.vc, defaultClass: 1 }),
  "htb-class-shaped": () => buildHtbClassRequest("add", tcHtbClass(idx.va, 0x30, 800000, 10000, 10000)),
  "htb-class-uncapped": () => buildHtbClassRequest("add", tcHtbClass(idx.va, 1, 100000000000, 65536, 200000)),
  "htb-class-8000": () => buildHtbClassRequest("add", tcHtbClass(idx.vc, 0x30, 8000, 10, 1000)),
  "class-show": () => buildClassDumpRequest(idx.va),
  "u32-ip-dst": () => tcPrefixFilter("10.1.0.0/16", "dst"),
  "u32-ip-src": () => tcPrefixFilter("192.168.7.0/24", "src"),
  "u32-ip-all": () => tcPrefixFilter("0.0.0.0/0", "dst"),
  "u32-ip6-dst": () => tcPrefixFilter("2001:db8:1::/48", "dst"),
  "u32-ip6-src": () => tcPrefixFilter("2001:db8:0:7:8000::/65", "src"),
};

function withoutSeqPid(b: Uint8Array): string {
  const c = b.slice();
  c.fill(0, 8, 16);
  return toHex(c);
}

describe("tc netlink requests match iproute2", () => {
  test("psched tick is 64 ns on this kernel family", () => {
    expect(TICK).toBe(15.625);
    expect(parsePsched("")).toBe(15.625);
    // a nanosecond clock_res: iproute2 treats t2us as equal to us2t
    expect(parsePsched("000003e8 00000040 3b9aca00 3b9aca00")).toBe(1000);
  });
  test("every captured command has a builder", () => {
    expect(Object.keys(ours).sort()).toEqual(Object.keys(cases).sort());
  });
  for (const [name, c] of Object.entries(cases)) {
    test(`${name}: ${c.command}`, () => {
      expect(withoutSeqPid(ours[name]!())).toBe(withoutSeqPid(fromHex(c.hex)));
    });
  }
});

describe("TBF rate table", () => {
  const tbfs: [string, number][] = [
    ["tbf-800k", 100000],
    ["tbf-replace-1m", 125000],
    ["tbf-8000", 1000],
    ["tbf-40g", 5000000000],
  ];
  for (const [name, rate] of tbfs) {
    test(`${name}: 1024 bytes equal tc's TCA_TBF_RTAB`, () => {
      const msg = fromHex(cases[name]!.hex);
      const opts = attrMap(msg.subarray(16), TCMSG_SIZE).get(TCA_OPTIONS)!;
      const rtab = attrMap(opts).get(TCA_TBF_RTAB)!;
      expect(rtab.byteLength).toBe(1024);
      expect(toHex(calcRateTable(rate, TICK).table)).toBe(toHex(rtab));
      // spot check: entry 0 is the time for 8 bytes (cell_log 3)
      expect(readU32(rtab, 0)).toBe(xmitTime(rate, 8, TICK));
    });
  }
});

describe("decoders", () => {
  test("an HTB class request decodes back to its parameters (64-bit rates too)", () => {
    const c = parseClass(buildHtbClassRequest("add", tcHtbClass(3, 1, 100000000000, 65536, 200000)).subarray(16));
    expect(c.kind).toBe("htb");
    expect(formatTcHandle(c.handle)).toBe("1:1");
    expect(c.htb).toMatchObject({ rate: 12500000000, ceil: 12500000000, quantum: 200000, level: 0, prio: 0 });
    const q = parseQdisc(buildHtbQdiscRequest("add", { index: 3, defaultClass: 0x30 }).subarray(16));
    expect(parseHtbDefaultClass(q.options!)).toBe(0x30);
  });
  test("u32 prefix keys: whole words, a partial last word, host bits masked, /0", () => {
    const v6 = ipToBytes(parseIP("2001:db8:0:7:ffff::1")!);
    expect(u32PrefixKeys(v6, 65, "src")).toEqual([
      { mask: 0xffffffff, value: 0x20010db8, off: 8 },
      { mask: 0xffffffff, value: 0x00000007, off: 12 },
      { mask: 0x80000000, value: 0x80000000, off: 16 },
    ]);
    expect(u32PrefixKeys(ipToBytes(parseIP("10.1.2.3")!), 16, "dst")).toEqual([{ mask: 0xffff0000, value: 0x0a010000, off: 16 }]);
    expect(u32PrefixKeys(ipToBytes(parseIP("10.1.2.3")!), 32, "src")).toEqual([{ mask: 0xffffffff, value: 0x0a010203, off: 12 }]);
    expect(u32PrefixKeys(ipToBytes(parseIP("::")!), 0, "dst")).toEqual([{ mask: 0, value: 0, off: 24 }]);
    expect(() => u32PrefixKeys(new Uint8Array(4), 33, "dst")).toThrow();
  });
  test("a TBF request decodes back to its parameters", () => {
    const req = buildTbfRequest("add", { index: 3, rate: 5000000000, limit: 9, buffer: 77 });
    const q = parseQdisc(req.subarray(16));
    expect(q.kind).toBe("tbf");
    expect(formatTcHandle(q.handle)).toBe("1:");
    expect(q.tbf).toEqual({ rate: 5000000000, peakRate: 0, limit: 9, buffer: 77, mtu: 0, linklayer: 1 });
  });
  test("a u32 filter decodes back to keys, classid and mirred target", () => {
    const req = buildU32FilterAddRequest({
      index: 3,
      parent: INGRESS_HANDLE,
      priority: 2,
      protocol: 0x0800,
      classId: tcHandle(1, 1),
      keys: [{ mask: 0xffff0000, value: 0x0a010000, off: 16 }],
      actions: [{ kind: "mirred", ifindex: 9 }],
    });
    const f = parseFilter(req.subarray(16));
    expect(f.priority).toBe(2);
    expect(f.protocol).toBe(0x0800);
    expect(f.classId).toBe(0x10001);
    expect(f.keys).toEqual([{ mask: 0xffff0000, value: 0x0a010000, off: 16, offmask: 0 }]);
    expect(f.actions).toEqual([{ kind: "mirred", mirred: { index: 0, verdict: 4, eaction: 1, ifindex: 9 } }]);
  });
  test("filterInfo puts protocol all in network order", () => {
    expect(filterInfo(1, ETH_P_ALL).toString(16)).toBe("10300");
    const m = buildMessage(RTM_NEWTFILTER, 0, (w) => writeTcmsg(w, { index: 1, parent: TC_H_INGRESS, info: filterInfo(1, ETH_P_ALL) }));
    expect(parseFilter(m.subarray(16)).protocol).toBe(ETH_P_ALL);
  });
});
