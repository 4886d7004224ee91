import { describe, expect, test } from "bun:test";
import { teardown, Undo } from "../undo/teardown.ts";
import type { FirewallDrivers } from "./backend.ts";
import { checkMasquerade, collectMasquerade, masqBackendOf, masqueradeTeardownStep, setupMasquerade, type MasqConfig } from "./ipmasq-steps.ts";
import { FakeIptables } from "./iptables/fake.ts";
import { FakeNft } from "./nftables/fake.ts";

function fakes(): FirewallDrivers & { iptables: FakeIptables; nftables: FakeNft } {
  return { iptables: new FakeIptables(), nftables: new FakeNft() };
}

const ARGS = { containerID: "ctr1", ifName: "eth0" };
const IPS = [{ address: "10.99.0.2/24" }, { address: "fd00::2/64" }];
const conf = (over: Partial<MasqConfig> = {}): MasqConfig => ({ name: "testbr", ipMasq: true, ipMasqBackend: "nftables", ...over });

describe("masquerade steps", () => {
  test("ADD sets the rules up after marking the step reached; its rollback removes them", async () => {
    const d = fakes();
    const c = conf();
    const hints: string[] = [];
    const undo = new Undo([masqueradeTeardownStep(c, ARGS, d, () => (hints.push("read"), []))], () => {});
    setupMasquerade(c, ARGS, IPS, masqBackendOf(c), d, undo);
    expect(d.nftables.dump()).toContain("ip saddr == 10.99.0.2 ip daddr != 10.99.0.0/24 masquerade");
    expect(d.nftables.dump()).toContain("ip6 saddr == fd00::2 ip6 daddr != fd00::/64 masquerade");
    checkMasquerade(c, ARGS, ["10.99.0.2/24", "fd00::2/64"], d);
    const failure = new Error("a later ADD step failed");
    await expect(undo.rollback(failure)).rejects.toBe(failure);
    expect(hints).toEqual(["read"]);
    expect(d.nftables.dump()).not.toContain("saddr");
  });

  test("DEL removes the rules from every backend, whichever ADD used; twice is fine", async () => {
    const d = fakes();
    const ADDED = "-A POSTROUTING -s 10.99.0.2/32";
    // ADD with the default backend (iptables); the config now names nftables: DEL still finds them.
    setupMasquerade(conf({ ipMasqBackend: "" }), ARGS, IPS, undefined, d, new Undo([masqueradeTeardownStep(conf(), ARGS, d, () => [])], () => {}));
    expect(d.iptables.dump(4)).toContain(ADDED);
    await teardown([masqueradeTeardownStep(conf(), ARGS, d, () => ["10.99.0.2/24"])]);
    expect(d.iptables.dump(4)).not.toContain(ADDED);
    await teardown([masqueradeTeardownStep(conf({ ipMasqBackend: "ebtables" }), ARGS, d, () => [])]);
  });

  test("without ipMasq nothing is parsed, read or written", async () => {
    const d = fakes();
    const off = conf({ ipMasq: false, ipMasqBackend: "ebtables" });
    expect(masqBackendOf(off)).toBeUndefined();
    setupMasquerade(off, ARGS, IPS, undefined, d, new Undo([], () => {}));
    checkMasquerade(off, ARGS, ["10.99.0.2/24"], d);
    collectMasquerade(off, [], d);
    let hinted = false;
    await teardown([masqueradeTeardownStep(off, ARGS, d, () => ((hinted = true), []))]);
    expect(hinted).toBe(false);
    expect(d.nftables.transactions).toHaveLength(0);
    expect(d.iptables.transactions).toHaveLength(0);
  });

  test("an unknown backend is refused on ADD and CHECK; CHECK reports missing rules; GC keeps live attachments", () => {
    const d = fakes();
    expect(() => masqBackendOf(conf({ ipMasqBackend: "ebtables" }))).toThrow('unknown ipmasq backend "ebtables"');
    expect(() => checkMasquerade(conf({ ipMasqBackend: "ebtables" }), ARGS, ["10.99.0.2/24"], d)).toThrow('unknown ipmasq backend "ebtables"');
    expect(() => checkMasquerade(conf(), ARGS, ["10.99.0.2/24"], d)).toThrow("IP masquerade for testbr is incomplete");
    const c = conf();
    setupMasquerade(c, ARGS, IPS, "nftables", d, new Undo([masqueradeTeardownStep(c, ARGS, d, () => [])], () => {}));
    collectMasquerade(c, [ARGS], d);
    expect(d.nftables.dump()).toContain("saddr == 10.99.0.2");
    collectMasquerade(c, [], d);
    expect(d.nftables.dump()).not.toContain("saddr");
  });
});
