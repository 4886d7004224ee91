/**
 * Interoperability with the Go plugin (Debian's /usr/lib/cni/host-local, 1.1.1) on one shared
 * store: the same allocation sequence gives the same addresses and the same file bytes, each
 * side finds, checks and releases the other's reservations, and both take the same flock.
 * Skipped when the Go plugin is not installed (`apt-get install containernetworking-plugins`).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CmdArgs, Command, Result } from "../../shared/cni/types.ts";
import { FileLock } from "../../shared/sys/flock.ts";
import { parseIP } from "../../shared/ip/addr.ts";
import { hostLocalPlugin } from "./host-local.ts";
import { INDEX_NAME } from "./store/index-file.ts";
import { PROCESS_SCOPE } from "../../shared/cni/call-scope.ts";
import { withDelegate } from "../../shared/cni/delegate.ts";

const GO_PLUGIN = "/usr/lib/cni/host-local";
const haveGo = existsSync(GO_PLUGIN);

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "hl-go-"));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function config(dataDir: string): Record<string, unknown> {
  return {
    cniVersion: "1.0.0",
    name: "shared",
    ipam: {
      type: "host-local",
      dataDir,
      ranges: [[{ subnet: "10.20.0.0/29", gateway: "10.20.0.6" }], [{ subnet: "fd00::/120" }]],
      routes: [{ dst: "0.0.0.0/0" }],
    },
  };
}

function goEnv(command: Command, id: string, ifName: string, args: string): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: id,
    CNI_NETNS: "/proc/self/ns/net",
    CNI_IFNAME: ifName,
    CNI_PATH: "/usr/lib/cni",
    CNI_ARGS: args,
    PATH: "/usr/bin:/bin",
  };
}

/** Runs the Go plugin; returns its parsed stdout and exit code. */
function go(command: Command, conf: Record<string, unknown>, id: string, ifName = "eth0", args = "") {
  const p = Bun.spawnSync([GO_PLUGIN], { env: goEnv(command, id, ifName, args), stdin: Buffer.from(JSON.stringify(conf)) });
  const out = p.stdout.toString();
  return { code: p.exitCode, json: out.trim() === "" ? undefined : (JSON.parse(out) as Record<string, unknown>) };
}

function ts(command: Command, conf: Record<string, unknown>, id: string, ifName = "eth0", args = ""): Result | undefined {
  const a: CmdArgs = withDelegate({
    command,
    containerID: id,
    netns: "/proc/self/ns/net",
    ifName,
    args,
    path: "/usr/lib/cni",
    stdinData: new TextEncoder().encode(JSON.stringify(conf)),
    config: conf,
    cniVersion: String(conf["cniVersion"]),
    env: {},
    stderr: () => {},
    scope: PROCESS_SCOPE,
  });
  switch (command) {
    case "ADD":
      return hostLocalPlugin.add(a) as Result;
    case "DEL":
      hostLocalPlugin.del(a);
      return undefined;
    case "CHECK":
      hostLocalPlugin.check!(a);
      return undefined;
    default:
      throw new Error(command);
  }
}

function ips(r: { ips?: unknown } | undefined): string[] {
  return ((r?.ips ?? []) as { address: string; gateway?: string }[]).map((i) => `${i.address} gw ${i.gateway}`);
}

/** name -> content of the reservation files. */
function files(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of readdirSync(dir)) {
    if (parseIP(f) !== null || f.startsWith("last_reserved_ip.")) out[f] = readFileSync(join(dir, f), "latin1");
  }
  return out;
}

describe.skipIf(!haveGo)("host-local interoperability with the Go plugin", () => {
  test("the same sequence gives the same addresses and byte-identical files", () => {
    const goDir = join(root, "go");
    const tsDir = join(root, "ts");
    const steps: [Command, string, string][] = [
      ["ADD", "c1", ""],
      ["ADD", "c2", "IP=10.20.0.4"],
      ["ADD", "c3", ""],
      ["DEL", "c1", ""],
      ["ADD", "c4", ""],
      ["ADD", "c1", ""],
    ];
    for (const [cmd, id, args] of steps) {
      const g = go(cmd, config(goDir), id, "eth0", args);
      expect(g.code).toBe(0);
      const t = ts(cmd, config(tsDir), id, "eth0", args);
      expect(ips(t)).toEqual(ips(g.json));
    }
    expect(files(join(tsDir, "shared"))).toEqual(files(join(goDir, "shared")));
    expect(ips(ts("ADD", config(tsDir), "c5"))).toEqual(ips(go("ADD", config(goDir), "c5").json)); // takes the freed .1
    const full = go("ADD", config(goDir), "c6");
    expect(full.code).toBe(1);
    expect(full.json?.["msg"]).toBe("failed to allocate for range 0: no IP addresses available in range set: 10.20.0.1-10.20.0.6");
    expect(() => ts("ADD", config(tsDir), "c6")).toThrow(String(full.json?.["msg"]));
  });

  test("each side finds, checks and releases the other's reservations on a shared store", () => {
    const conf = config(root);
    const dir = join(root, "shared");
    expect(ips(go("ADD", conf, "go1").json)).toEqual(["10.20.0.1/29 gw 10.20.0.6", "fd00::2/120 gw fd00::1"]);
    // TS continues Go's round robin and indexes the directory.
    expect(ips(ts("ADD", conf, "ts1"))).toEqual(["10.20.0.2/29 gw 10.20.0.6", "fd00::3/120 gw fd00::1"]);
    expect(existsSync(join(dir, INDEX_NAME))).toBe(true);
    ts("CHECK", conf, "go1");
    // Go reads past our index file and handles our reservations.
    expect(go("CHECK", conf, "ts1").code).toBe(0);
    expect(ips(go("ADD", conf, "go2").json)).toEqual(["10.20.0.3/29 gw 10.20.0.6", "fd00::4/120 gw fd00::1"]);
    expect(go("DEL", conf, "ts1").code).toBe(0);
    expect(existsSync(join(dir, "10.20.0.2"))).toBe(false);
    expect(existsSync(join(dir, INDEX_NAME))).toBe(true);
    // TS notices Go's changes behind its index.
    expect(() => ts("CHECK", conf, "ts1")).toThrow("host-local: Failed to find address added by container ts1");
    ts("CHECK", conf, "go2");
    ts("DEL", conf, "go2");
    expect(go("CHECK", conf, "go2").code).toBe(1);
    expect(Object.keys(files(dir)).filter((f) => parseIP(f) !== null).sort()).toEqual(["10.20.0.1", "fd00::2"]);
  });

  test("the Go plugin waits for the lock held by the TypeScript store", async () => {
    const conf = config(root);
    ts("ADD", conf, "first");
    const lock = FileLock.open(join(root, "shared", "lock"));
    lock.lock();
    const child = Bun.spawn([GO_PLUGIN], {
      env: goEnv("ADD", "waiter", "eth0", ""),
      stdin: Buffer.from(JSON.stringify(conf)),
      stdout: "pipe",
    });
    try {
      await Bun.sleep(400);
      expect(child.exitCode).toBeNull();
    } finally {
      lock.unlock();
      lock.close();
    }
    expect(await child.exited).toBe(0);
    expect(ips(JSON.parse(await new Response(child.stdout).text()))).toEqual([
      "10.20.0.2/29 gw 10.20.0.6",
      "fd00::3/120 gw fd00::1",
    ]);
  });
});
