/**
 * Golden bytes for the tc request builders (tc-qdisc.ts, tc-filter.ts, tc-action.ts) against what
 * iproute2's `tc` sent (test/fixtures/netlink/tc-iproute2-requests.json); nlmsg_seq and nlmsg_pid
 * (bytes 8..15) are ignored. The rate table is also checked on its own, for each captured TBF.
 *
 * Captured inside `unshare -n` with veth va/vb, ifb bwtest and veth vc/vd, running each command as
 * `strace -f -e trace=sendmsg,sendto -e write=3 -x tc ...` and keeping the last sendmsg buffer.
 */
import { describe, expect, test } from "bun:test";
import fixtures from "../../test/fixtures/netlink/tc-iproute2-requests.json";
import { attrMap, buildMessage, fromHex, readU32, toHex } from "./codec.ts";
import { ETH_P_ALL } from "./constants/pkt-cls.ts";
import { TCA_OPTIONS, TCA_TBF_RTAB, TCMSG_SIZE, TC_H_INGRESS, TC_H_MIN_INGRESS } from "./constants/pkt-sched.ts";
import { RTM_NEWTFILTER } from "./constants/rtnetlink.ts";
import { TCA_EGRESS_REDIR } from "./constants/tc-act.ts";
import { buildFilterDelRequest, buildFilterDumpRequest, buildU32FilterAddRequest, filterInfo, parseFilter } from "./tc-filter.ts";
import { formatTcHandle, tcHandle, writeTcmsg } from "./tc-msg.ts";
import {
  buildClsactQdiscAddRequest,
  buildIngressQdiscRequest,
  buildQdiscDelRequest,
  buildQdiscDumpRequest,
  buildTbfRequest,
  parseQdisc,
  INGRESS_HANDLE,
} from "./tc-qdisc.ts";
import { calcRateTable, parsePsched, xmitTime } from "./tc-rate-table.ts";

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
