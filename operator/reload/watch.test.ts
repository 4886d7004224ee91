/**
 * The watcher (watch.ts) with fake passes and sources: a pass at start, one pass per burst of
 * changes, none while nothing happens, stop on abort with status 0, status 1 when the first pass
 * cannot run, retries of failures, and the back-off when the same rules keep disappearing. The
 * sources: nf_tables deletions that matter (nftables-events.ts) and firewalld's signals and
 * reconnects (firewalld-events.ts).
 */
import { describe, expect, test } from "bun:test";
import type { DBusConnection, DBusSignal } from "../../shared/dbus/client.ts";
import { firewalldChange, watchFirewalld, type FirewalldEventsDeps } from "./firewalld-events.ts";
import { relevantDeletion as relevantDeletionIn } from "./nftables-events.ts";
import { watchedTables } from "./system.ts";
import type { NftDeletion } from "../../shared/netlink/nftables-events.ts";
import type { ReloadReport } from "./pass.ts";
import { startReloadWatch, type ReloadWatchDeps } from "./watch.ts";
import { pluginOwnerships } from "../../registry/registry.ts";

function report(state: "ok" | "restored" | "failed" = "ok"): ReloadReport {
  return {
    cacheDir: "/c",
    dryRun: false,
    problems: [],
    attachments: [{ network: "n", containerID: "c", ifName: "eth0", cache: "/c/results/n-c-eth0", state, why: "", notes: [], parts: [{ what: "ipMasq (iptables)", state, problems: [] }] }],
  };
}

interface Harness {
  deps: ReloadWatchDeps;
  passes: number;
  next: (() => ReloadReport)[];
  change(why: string): void;
  logs: string[];
  seen: string[];
}

function harness(firstFails = false): Harness {
  let onChange: (why: string) => void = () => {};
  const h: Harness = {
    passes: 0,
    next: [],
    logs: [],
    seen: [],
    change: (why) => onChange(why),
    deps: {
      pass: async () => {
        h.passes++;
        if (firstFails && h.passes === 1) throw new Error("EACCES: /run/cni/reload/lock");
        return (h.next.shift() ?? (() => report()))();
      },
      watchNftables: (fn, _log, signal) => {
        onChange = fn;
        return { started: true, stopped: new Promise((resolve) => signal.addEventListener("abort", () => resolve())) };
      },
      watchFirewalld: async () => {},
      iptablesMode: () => "nft",
    },
  };
  return h;
}

const OPTS = { reload: { cacheDir: "/c", networks: [], valid: undefined, env: {} }, busAddress: "unix:path=/x", intervalMs: 0, debounceMs: 5 };

async function until(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(2);
  }
}

function sinks(h: Harness) {
  return { pass: (_r: ReloadReport, why: string) => void h.seen.push(why), log: (l: string) => void h.logs.push(l) };
}

describe("reload --watch", () => {
  test("a pass at start, one per burst of changes, none otherwise; stops with status 0", async () => {
    const h = harness();
    const stop = new AbortController();
    const w = startReloadWatch(OPTS, sinks(h), stop.signal, h.deps);
    await until(() => h.logs.length > 0);
    expect(h.seen).toEqual(["start"]);
    expect(h.logs[0]).toBe("watching (iptables nft): nf_tables notifications, firewalld on D-Bus");
    h.change("a");
    h.change("b");
    h.change("a");
    await until(() => h.seen.length === 2);
    expect(h.seen).toEqual(["start", "a; b"]);
    await Bun.sleep(30);
    expect(h.passes).toBe(2);
    w.trigger("asked");
    await until(() => h.seen.length === 3);
    expect(h.seen.at(-1)).toBe("asked");
    stop.abort();
    expect(await w.done).toBe(0);
    h.change("after stop");
    await Bun.sleep(20);
    expect(h.passes).toBe(3);
  });

  test("cannot work at all (the first pass fails): status 1 and why", async () => {
    const h = harness(true);
    const w = startReloadWatch(OPTS, sinks(h), new AbortController().signal, h.deps);
    expect(await w.done).toBe(1);
    expect(h.logs).toEqual(["cannot work: EACCES: /run/cni/reload/lock"]);
  });

  test("what could not be restored is retried", async () => {
    const h = harness();
    h.next.push(() => report("failed"));
    const stop = new AbortController();
    const w = startReloadWatch(OPTS, sinks(h), stop.signal, h.deps);
    await until(() => h.seen.length === 2);
    expect(h.seen).toEqual(["start", "retrying what could not be restored"]);
    stop.abort();
    expect(await w.done).toBe(0);
  });

  test("the same rules deleted again as soon as they are back: passes are spaced out, and that is said; firewalld's own doings are no fight", async () => {
    const h = harness();
    for (let i = 0; i < 9; i++) h.next.push(() => report("restored"));
    const stop = new AbortController();
    const w = startReloadWatch(OPTS, sinks(h), stop.signal, h.deps);
    await until(() => h.logs.length > 0);
    // start, then quick repairs after nf_tables notifications; a firewalld reload in between starts the count again
    h.change("nf_tables: table ip nat deleted");
    await until(() => h.passes === 2);
    h.change("firewalld reloaded");
    await until(() => h.passes === 3);
    for (let i = 4; i <= 6; i++) {
      h.change(`nf_tables: rule deleted from ip nat POSTROUTING ${i}`);
      await until(() => h.passes === i);
    }
    expect(h.logs.filter((l) => l.includes("keeps removing"))).toEqual([]);
    h.change("nf_tables: rule deleted from ip nat POSTROUTING 7");
    await until(() => h.passes === 7);
    // the 5th quick restore of the same rules in a row (since firewalld's) makes the next pass wait a second
    expect(h.logs.some((l) => /restored 5 times within seconds: something keeps removing them; the next pass waits 1 s/.test(l))).toBe(true);
    const asked = Date.now();
    h.change("nf_tables: rule deleted from ip nat POSTROUTING 8");
    await until(() => h.passes === 8);
    expect(Date.now() - asked).toBeGreaterThanOrEqual(900);
    stop.abort();
    expect(await w.done).toBe(0);
  });
});

describe("sources", () => {
  test("the tables the registry's plugins write to are watched: iptables-nft's, ours, spoof-check's", async () => {
    expect([...(watchedTables(await pluginOwnerships()))].sort()).toEqual([
      "bridge nat",
      "inet cni_plugins_firewall",
      "inet cni_plugins_masquerade",
      "ip cni_hostport",
      "ip filter",
      "ip nat",
      "ip6 cni_hostport",
      "ip6 filter",
      "ip6 nat",
    ]);
  });

  test("nf_tables: deletions in the tables the plugins write to matter, others do not", async () => {
    const tables = watchedTables(await pluginOwnerships());
    const relevantDeletion = (changes: readonly NftDeletion[]) => relevantDeletionIn(changes, tables);
    expect(relevantDeletion([{ kind: "rule", family: "ip", table: "nat", chain: "POSTROUTING" }])).toBe("nf_tables: rule deleted from ip nat POSTROUTING");
    expect(relevantDeletion([{ kind: "table", family: "inet", table: "cni_plugins_masquerade" }])).toBe("nf_tables: table inet cni_plugins_masquerade deleted");
    expect(relevantDeletion([{ kind: "chain", family: "bridge", table: "nat", chain: "PREROUTING" }])).toBe("nf_tables: chain PREROUTING of bridge nat deleted");
    expect(relevantDeletion([{ kind: "table", family: "inet", table: "firewalld" }, { kind: "rule", family: "ip", table: "kube-proxy", chain: "x" }])).toBeUndefined();
    expect(relevantDeletion([{ kind: "table", family: undefined, table: "nat" }])).toBeUndefined();
  });

  test("firewalld: Reloaded and a new owner of its name matter; a lost owner does not", () => {
    const sig = (member: string, body: unknown[], iface = "org.fedoraproject.FirewallD1"): DBusSignal => ({ sender: "", path: "", interface: iface, member, body });
    expect(firewalldChange(sig("Reloaded", []))).toBe("firewalld reloaded");
    expect(firewalldChange(sig("NameOwnerChanged", ["org.fedoraproject.FirewallD1", "", ":1.5"], "org.freedesktop.DBus"))).toBe("firewalld started");
    expect(firewalldChange(sig("NameOwnerChanged", ["org.fedoraproject.FirewallD1", ":1.5", ""], "org.freedesktop.DBus"))).toBeUndefined();
    expect(firewalldChange(sig("NameOwnerChanged", ["org.other", "", ":1.6"], "org.freedesktop.DBus"))).toBeUndefined();
  });

  test("firewalld: subscribes, reports signals, connects again after the bus went away and says so", async () => {
    const conns: { signal(s: DBusSignal): void; close(): void; calls: string[] }[] = [];
    let missing = 1;
    const deps: FirewalldEventsDeps = {
      busMissing: () => missing-- > 0,
      sleep: async () => void (await Bun.sleep(1)),
      connect: async () => {
        const onSignal: ((s: DBusSignal) => void)[] = [];
        const onClose: (() => void)[] = [];
        const calls: string[] = [];
        conns.push({ signal: (s) => onSignal.forEach((f) => f(s)), close: () => onClose.splice(0).forEach((f) => f()), calls });
        const conn: DBusConnection = {
          call: async (m) => void calls.push(`${m.member} ${String(m.body?.[0] ?? "")}`),
          onSignal: (f) => void onSignal.push(f),
          onClose: (f) => void onClose.push(() => f(undefined)),
          close: () => {},
        };
        return conn;
      },
    };
    const changes: string[] = [];
    const logs: string[] = [];
    const stop = new AbortController();
    const done = watchFirewalld("unix:path=/bus", (w) => void changes.push(w), (l) => void logs.push(l), stop.signal, deps);
    while (conns.length < 1 || conns[0]!.calls.length < 2) await Bun.sleep(1);
    expect(conns[0]!.calls.map((c) => c.split(" ")[0])).toEqual(["AddMatch", "AddMatch"]);
    expect(conns[0]!.calls[0]).toContain("member='Reloaded'");
    conns[0]!.signal({ sender: ":1.2", path: "/org/fedoraproject/FirewallD1", interface: "org.fedoraproject.FirewallD1", member: "Reloaded", body: [] });
    expect(changes).toEqual(["firewalld reloaded"]);
    conns[0]!.close();
    while (conns.length < 2 || conns[1]!.calls.length < 2) await Bun.sleep(1);
    await Bun.sleep(5);
    expect(changes).toEqual(["firewalld reloaded", "D-Bus connection made again"]);
    expect(logs).toEqual([
      "no D-Bus system bus at unix:path=/bus: firewalld reloads are not watched until it appears",
      "watching firewalld on the D-Bus system bus unix:path=/bus",
      "lost the D-Bus connection to unix:path=/bus; connecting again",
      "watching firewalld on the D-Bus system bus unix:path=/bus",
    ]);
    stop.abort();
    await done;
  });
});
