import { describe, expect, test } from "bun:test";
import { toErrorJson } from "../cni/errors.ts";
import { TeardownError } from "../undo/teardown.ts";
import { collectEverywhere, runAll, teardownEverywhere, type BackendName, type FirewallFeature } from "./backend.ts";
import { CommandError, CommandNotFoundError } from "./exec.ts";
import { annotateError } from "../error/annotate.ts";
import { NftUnsupportedError } from "./nftables/driver.ts";

/** A feature that records its calls and fails as told. */
function feature(backend: BackendName, opts: { available?: boolean; fail?: unknown } = {}): FirewallFeature<string, string, string> & { calls: string[] } {
  const calls: string[] = [];
  const maybeFail = (): void => {
    if (opts.fail !== undefined) throw opts.fail;
  };
  return {
    backend,
    calls,
    available: () => opts.available ?? true,
    setup: (t) => void calls.push(`setup ${t}`),
    check: () => [],
    teardown: (t, expected) => {
      calls.push(`teardown ${t} ${expected}`);
      maybeFail();
      return `${backend} removed ${t}`;
    },
    gc: (network, keep) => {
      calls.push(`gc ${network} ${keep.map((k) => k.containerID).join(",")}`);
      maybeFail();
    },
  };
}

describe("teardown in every backend", () => {
  test("every available backend runs; the chosen one is told its rules are expected", () => {
    const ipt = feature("iptables");
    const nft = feature("nftables");
    expect(teardownEverywhere([ipt, nft], "c1", "nftables")).toEqual(["iptables removed c1", "nftables removed c1"]);
    expect(ipt.calls).toEqual(["teardown c1 false"]);
    expect(nft.calls).toEqual(["teardown c1 true"]);
  });
  test("a backend without tools, or one the kernel cannot do, is skipped", () => {
    const gone = feature("iptables", { available: false });
    const unsupported = feature("nftables", { fail: new CommandError(["nft", "-f", "-"], 1, "Error: Could not process rule: Operation not supported") });
    expect(teardownEverywhere([gone, unsupported], "c1", "iptables")).toEqual([]);
    expect(gone.calls).toEqual([]);
    expect(teardownEverywhere([feature("iptables", { fail: new CommandNotFoundError("iptables") })], "c1", "iptables")).toEqual([]);
  });
  test("a backend whose every family answers that the kernel lacks nf_tables is skipped; one real failure among them is not", () => {
    // what a feature that works per family (runAll over IPv4 and IPv6) throws on such a kernel
    const perFamily = (errors: unknown[]) => new TeardownError(errors.map((e, i) => annotateError(`IPv${i === 0 ? 4 : 6}`, e)));
    const missing = () => new NftUnsupportedError("nf_tables is not available: protocol not supported (EPROTONOSUPPORT)");
    const noKernel = feature("nftables", { fail: perFamily([missing(), missing()]) });
    expect(teardownEverywhere([noKernel], "c1", "iptables")).toEqual([]);
    expect(() => collectEverywhere([noKernel], "net", [])).not.toThrow();
    expect(() => collectEverywhere([feature("nftables", { fail: annotateError("IPv6", missing()) })], "net", [])).not.toThrow();
    const oneReal = feature("nftables", { fail: perFamily([missing(), new Error("busy")]) });
    expect(() => collectEverywhere([oneReal], "net", [])).toThrow("IPv6: busy");
  });
  test("other failures: all backends still run, the failures are reported together and named", () => {
    const ipt = feature("iptables", { fail: new Error("lock held") });
    const nft = feature("nftables");
    expect(() => teardownEverywhere([ipt, nft], "c1", "iptables")).toThrow("iptables: lock held");
    expect(nft.calls).toEqual(["teardown c1 false"]);
    let err: unknown;
    try {
      teardownEverywhere([ipt, feature("nftables", { fail: new Error("busy") })], "c1", "iptables");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TeardownError);
    expect(toErrorJson(err)).toEqual({ code: 999, msg: "iptables: lock held; nftables: busy" });
  });
  test("GC goes to every available backend", () => {
    const ipt = feature("iptables");
    const nft = feature("nftables", { available: false });
    collectEverywhere([ipt, nft], "net", [{ containerID: "a", ifName: "eth0" }]);
    expect(ipt.calls).toEqual(["gc net a"]);
    expect(nft.calls).toEqual([]);
  });
  test("runAll runs every item and labels failures", () => {
    const seen: number[] = [];
    expect(() =>
      runAll([4, 6], (f) => `IPv${f}`, (f) => {
        seen.push(f);
        if (f === 4) throw new Error("no");
      }),
    ).toThrow("IPv4: no");
    expect(seen).toEqual([4, 6]);
    expect(runAll([1, 2], String, (n) => n * 2)).toEqual([2, 4]);
  });
});
