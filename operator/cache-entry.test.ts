import { describe, expect, test } from "bun:test";
import { CacheEntryError, parseCacheEntry, resultAddresses } from "./cache-entry.ts";

const list = { name: "net", cniVersion: "1.0.0", plugins: [{ type: "bridge" }] };
const good = {
  kind: "cniCacheV1",
  containerId: "c",
  config: Buffer.from(JSON.stringify(list)).toString("base64"),
  ifName: "eth0",
  networkName: "net",
  netns: "/n",
  cniArgs: [["K", "V"], ["bad"]],
  capabilityArgs: { portMappings: [] },
  result: { ips: [{ address: "10.0.0.2/24" }] },
};

describe("libcni cache entries", () => {
  test("a complete entry (libcni cachedInfo)", () => {
    const e = parseCacheEntry("/c/results/net-c-eth0", JSON.stringify(good));
    expect(e).toEqual({
      file: "/c/results/net-c-eth0",
      containerID: "c",
      ifName: "eth0",
      networkName: "net",
      netns: "/n",
      cniArgs: [["K", "V"]],
      capabilityArgs: { portMappings: [] },
      network: { ...list, file: "/c/results/net-c-eth0" },
      result: good.result,
    });
    expect(resultAddresses(e.result)).toEqual(["10.0.0.2"]);
    expect(resultAddresses({ ip4: { ip: "10.1.0.2/16" }, ip6: { ip: "fd00::2/64" } })).toEqual(["10.1.0.2", "fd00::2"]);
  });

  test("what is wrong is said: truncated, not an object, another kind, a missing key", () => {
    const err = (text: string): string => {
      try {
        parseCacheEntry("f", text);
      } catch (e) {
        expect(e).toBeInstanceOf(CacheEntryError);
        return (e as Error).message;
      }
      throw new Error("parsed");
    };
    expect(err(JSON.stringify(good).slice(0, 40))).toMatch(/^not JSON \(truncated\?\)/);
    expect(err("[]")).toBe("not a JSON object");
    expect(err(JSON.stringify({ ...good, kind: "cniCacheV0" }))).toBe('kind "cniCacheV0" is not cniCacheV1');
    expect(err(JSON.stringify({ ...good, ifName: "" }))).toBe('no "ifName"');
  });

  test("a config that cannot be used is reported, the entry still counts", () => {
    expect(parseCacheEntry("f", JSON.stringify({ ...good, config: Buffer.from("{").toString("base64") })).configProblem).toMatch(/^config: not JSON/);
    const other = parseCacheEntry("f", JSON.stringify({ ...good, config: Buffer.from(JSON.stringify({ ...list, name: "x" })).toString("base64") }));
    expect([other.network, other.configProblem]).toEqual([undefined, 'config: names network "x", not "net"']);
    const none = parseCacheEntry("f", JSON.stringify({ ...good, config: undefined }));
    expect([none.network, none.configProblem]).toEqual([undefined, undefined]);
  });
});
