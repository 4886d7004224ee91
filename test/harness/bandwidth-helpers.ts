/**
 * Helpers for the bandwidth integration tests: a `tc -j` oracle for qdiscs/filters (in the test's
 * netns or, given `netns`, in a container netns), IFB names computed independently of the plugin,
 * and a timed TCP transfer between the test's (throwaway) host netns and a container netns.
 */
import { expect } from "bun:test";
import { registerCleanup } from "./cleanup.ts";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer, type AddressInfo } from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expectResult } from "./cni-expect.ts";
import { execPlugin } from "./exec-plugin.ts";
import { ptpConf } from "./ptp-helpers.ts";
import { makeTempDir } from "./tempdir.ts";

/** Upstream's IFB name: `bwp` + 12 hex of sha512(network + containerID). */
export function goIfbName(network: string, containerID: string): string {
  return "bwp" + createHash("sha512").update(network + containerID).digest("hex").slice(0, 12);
}

/** ptp ADD on its own (host-local on `subnet`), for invoking bandwidth directly with a prevResult; its host veth goes away after the test. */
export async function ptpAdd(net: string, subnet: string, cid: string, netns: string, ifName = "eth0", version = "1.0.0"): Promise<Record<string, any>> {
  const conf = ptpConf({ cniVersion: version, name: net, dataDir: makeTempDir("bw-store-"), subnets: [subnet] });
  const r = expectResult(await execPlugin("ptp", { command: "ADD", containerID: cid, netns, ifName, config: conf }));
  registerCleanup(`ptp veth ${cid} ${ifName}`, () => {
    spawnSync("ip", ["link", "del", r.interfaces[0].name]);
  });
  return r;
}

/** A bandwidth config for direct invocation. */
export function bwConf(net: string, limits: Record<string, unknown>, prevResult: unknown, version = "1.0.0"): Record<string, unknown> {
  return { cniVersion: version, name: net, type: "bandwidth", ...limits, prevResult };
}

export interface TcQdisc {
  kind: string;
  handle: string;
  root?: boolean;
  parent?: string;
  options?: Record<string, any>;
}

/** argv run in `netns` (the test's own netns when undefined). */
function inNetns(netns: string | undefined, argv: string[]): [string, string[]] {
  return netns === undefined ? [argv[0]!, argv.slice(1)] : ["nsenter", [`--net=${netns}`, "--", ...argv]];
}

function tcJson(args: string[], netns?: string): any[] {
  const r = spawnSync(...inNetns(netns, ["tc", "-j", ...args]), { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tc ${args.join(" ")}: ${r.stderr}`);
  const out = r.stdout.trim();
  return out === "" ? [] : (JSON.parse(out) as any[]);
}

/** `tc -s -j qdisc show dev X`. */
export function qdiscsOf(dev: string, netns?: string): TcQdisc[] {
  return tcJson(["-s", "qdisc", "show", "dev", dev], netns);
}

/** The root TBF of a device, if any. */
export function tbfOf(dev: string, netns?: string): TcQdisc | undefined {
  return qdiscsOf(dev, netns).find((q) => q.kind === "tbf" && q.root === true);
}

/** `tc -j filter show dev X ingress` (entries with options only, i.e. the key nodes). */
export function ingressFiltersOf(dev: string, netns?: string): any[] {
  return tcJson(["filter", "show", "dev", dev, "ingress"], netns).filter((f) => f.options?.actions !== undefined);
}

/** An HTB class as `tc class show dev X` prints it (iproute2 6.1 has no JSON for htb classes). */
export interface HtbClassLine {
  classid: string;
  rate: string;
  ceil: string;
  burst: string;
  cburst: string;
}

function tcText(args: string[], netns?: string): string {
  const r = spawnSync(...inNetns(netns, ["tc", ...args]), { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tc ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** `tc class show dev X`, the htb classes. */
export function htbClassesOf(dev: string, netns?: string): HtbClassLine[] {
  const out: HtbClassLine[] = [];
  for (const line of tcText(["class", "show", "dev", dev], netns).split("\n")) {
    const m = /^class htb (\S+) .*\brate (\S+) ceil (\S+) burst (\S+) cburst (\S+)/.exec(line);
    if (m !== null) out.push({ classid: m[1]!, rate: m[2]!, ceil: m[3]!, burst: m[4]!, cburst: m[5]! });
  }
  return out.sort((a, b) => a.classid.localeCompare(b.classid));
}

/** A u32 key node as `tc filter show` prints it: protocol, pref, flowid and `match V/M at OFF` lines. */
export interface U32Line {
  protocol: string;
  pref: number;
  flowid: string;
  matches: string[];
}

/** `tc filter show dev X parent P`, the u32 key nodes (those with a flowid). */
export function u32FiltersOf(dev: string, parent: string, netns?: string): U32Line[] {
  const out: U32Line[] = [];
  for (const line of tcText(["filter", "show", "dev", dev, "parent", parent], netns).split("\n")) {
    const head = /^filter .*protocol (\S+) pref (\d+) u32 .*\bflowid (\S+)/.exec(line);
    if (head !== null) {
      out.push({ protocol: head[1]!, pref: Number(head[2]), flowid: head[3]!, matches: [] });
      continue;
    }
    const match = /^\s+match (\S+) at (\d+)/.exec(line);
    if (match !== null && out.length > 0) out.at(-1)!.matches.push(`${match[1]} at ${match[2]}`);
  }
  return out;
}

/** Adds an address to the test netns's loopback (a second "remote" the container can reach via its gateway). */
export function addLoopbackAddress(cidr: string): void {
  const r = spawnSync("ip", ["addr", "add", cidr, "dev", "lo"], { encoding: "utf8" });
  if (r.status !== 0 && !/File exists|already assigned/.test(r.stderr)) throw new Error(`ip addr add ${cidr}: ${r.stderr}`);
  // The test netns is shared by every integration file: a stray address on lo breaks loopback's
  // own-netns probes later on, so it goes away with this test's fixtures.
  registerCleanup(`lo address ${cidr}`, () => {
    spawnSync("ip", ["addr", "del", cidr, "dev", "lo"]);
  });
}

/** Runs `tc ...` in the test's netns, throwing on failure. */
export function tc(...args: string[]): void {
  tcIn(undefined, ...args);
}

/** Runs `tc ...` in `netns`, throwing on failure. */
export function tcIn(netns: string | undefined, ...args: string[]): void {
  const r = spawnSync(...inNetns(netns, ["tc", ...args]), { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tc ${args.join(" ")}: ${r.stderr}`);
}

/** Whether a link exists (in the test's netns, or in `netns`). */
export function linkExists(name: string, netns?: string): boolean {
  return spawnSync(...inNetns(netns, ["ip", "link", "show", "dev", name]), { encoding: "utf8" }).status === 0;
}

/** Names of the IFB links (in the test's netns, or in `netns`). */
export function ifbLinks(netns?: string): string[] {
  const r = spawnSync(...inNetns(netns, ["ip", "-j", "-d", "link", "show", "type", "ifb"]), { encoding: "utf8" });
  if (r.status !== 0 || r.stdout.trim() === "") return [];
  return (JSON.parse(r.stdout) as { ifname: string }[]).map((l) => l.ifname);
}

/** The script run inside the container netns for a transfer. */
const PEER_SCRIPT = `
const net = require("node:net");
const [mode, host, port, size] = process.argv.slice(2);
if (mode === "send") {
  const s = net.connect(Number(port), host, () => {
    const chunk = Buffer.alloc(16384, 120);
    let left = Number(size);
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) { s.once("drain", pump); return; }
      }
      s.end();
    };
    pump();
  });
  s.on("close", () => process.exit(0));
  s.on("error", (e) => { console.error(String(e)); process.exit(1); });
} else {
  const srv = net.createServer((c) => {
    let got = 0, first = 0, firstLen = 0;
    c.on("data", (d) => { if (got === 0) { first = performance.now(); firstLen = d.length; } got += d.length; });
    c.on("end", () => { console.log(JSON.stringify({ bytes: got, firstLen, ms: performance.now() - first })); process.exit(0); });
  });
  srv.listen(Number(port), host, () => console.log("ready"));
}
`;

function peerScript(): string {
  const dir = makeTempDir("bw-peer-");
  const file = join(dir, "peer.cjs");
  writeFileSync(file, PEER_SCRIPT);
  return file;
}

export interface Transfer {
  bytes: number;
  /** From the first read to the end at the receiver. */
  ms: number;
  /**
   * bits per second over that span, not counting the first read's bytes: they may have queued in
   * the socket while the receiver was slow to start reading (a loaded machine), which would
   * otherwise inflate the rate.
   */
  bitsPerSecond: number;
}

function measured(bytes: number, firstLen: number, ms: number): Transfer {
  return { bytes, ms, bitsPerSecond: ((bytes - firstLen) * 8 * 1000) / Math.max(ms, 1) };
}

/**
 * Host → container: a server in the container netns, the test process sends `size` bytes (from
 * `localAddress` when given, so the packets carry that source).
 */
export async function transferToContainer(netnsPath: string, containerIp: string, size: number, localAddress?: string): Promise<Transfer> {
  const script = peerScript();
  const port = 20000 + Math.floor(Math.random() * 20000);
  const proc = Bun.spawn(["nsenter", `--net=${netnsPath}`, process.execPath, script, "recv", containerIp, String(port), "0"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`peer exited: ${await new Response(proc.stderr).text()}`);
    text += new TextDecoder().decode(value);
  }
  await new Promise<void>((resolve, reject) => {
    const { connect } = require("node:net") as typeof import("node:net");
    const s = connect({ port, host: containerIp, ...(localAddress !== undefined ? { localAddress } : {}) }, () => {
      const chunk = Buffer.alloc(16384, 120);
      let left = size;
      const pump = (): void => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
            s.once("drain", pump);
            return;
          }
        }
        s.end();
      };
      pump();
    });
    s.on("close", () => resolve());
    s.on("error", reject);
  });
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  await proc.exited;
  const line = text.split("\n").find((l) => l.startsWith("{"));
  if (line === undefined) throw new Error(`no measurement from peer: ${text} ${await new Response(proc.stderr).text()}`);
  const r = JSON.parse(line) as { bytes: number; firstLen: number; ms: number };
  return measured(r.bytes, r.firstLen, r.ms);
}

/** Container → host: a server in the test process, the container sends `size` bytes to `hostIp`. */
export async function transferFromContainer(netnsPath: string, hostIp: string, size: number): Promise<Transfer> {
  const script = peerScript();
  let first = 0;
  let firstLen = 0;
  let got = 0;
  const done = new Promise<Transfer>((resolve) => {
    const srv = createServer((c) => {
      c.on("data", (d: Buffer) => {
        if (got === 0) {
          first = performance.now();
          firstLen = d.length;
        }
        got += d.length;
      });
      c.on("end", () => {
        srv.close();
        resolve(measured(got, firstLen, performance.now() - first));
      });
    });
    srv.listen(0, hostIp, () => {
      const port = (srv.address() as AddressInfo).port;
      const proc = Bun.spawn(["nsenter", `--net=${netnsPath}`, process.execPath, script, "send", hostIp, String(port), String(size)], {
        stdout: "ignore",
        stderr: "inherit",
      });
      void proc.exited;
    });
  });
  return done;
}

/** A transfer's rate for log lines. */
export const bitRate = (t: Transfer): string => `${Math.round(t.bitsPerSecond)} bit/s`;

/**
 * A shaped transfer: every byte arrived, never faster than the limit (+25 % for the burst and
 * timing), and not throttled far below it (the floor is generous: the machine may be loaded).
 */
export function expectLimited(t: Transfer, rate: number, size: number, what: string): void {
  expect(t.bytes, what).toBe(size);
  expect(t.bitsPerSecond, `${what} (${bitRate(t)}) is at most the limit`).toBeLessThan(rate * 1.25);
  expect(t.bitsPerSecond, `${what} (${bitRate(t)}) is not throttled far below the limit`).toBeGreaterThan(rate * 0.3);
}

/**
 * An unshaped transfer, repeated (up to 3 runs) while it does not run clearly above `rate`: on a
 * loaded machine one run can be starved by the scheduler, which says nothing about shaping. The
 * fastest run is returned. (Shaped runs need no retry: load can only make them slower, and their
 * check is an upper bound.)
 */
export async function fastestOf(rate: number, run: () => Promise<Transfer>): Promise<Transfer> {
  let best = await run();
  for (let i = 1; i < 3 && best.bitsPerSecond <= rate * 3; i++) {
    const t = await run();
    if (t.bitsPerSecond > best.bitsPerSecond) best = t;
  }
  return best;
}

/** {@link transferBothWays} for the unshaped control, each direction through {@link fastestOf}. */
export async function transferBothWaysUnshaped(label: string, netnsPath: string, containerIp: string, hostIp: string, size: number, rate: number): Promise<[Transfer, Transfer]> {
  const toContainer = await fastestOf(rate, () => transferToContainer(netnsPath, containerIp, size));
  const fromContainer = await fastestOf(rate, () => transferFromContainer(netnsPath, hostIp, size));
  console.log(`${label}: to container ${bitRate(toContainer)}, from container ${bitRate(fromContainer)}`);
  return [toContainer, fromContainer];
}

/** An unshaped transfer runs far above the limit, so the limit is what a shaped one measured. */
export function expectUnshaped(t: Transfer, rate: number, size: number, what: string): void {
  expect(t.bytes, what).toBe(size);
  expect(t.bitsPerSecond, `${what} (${bitRate(t)}) runs far above the limit`).toBeGreaterThan(rate * 3);
}

/** `size` bytes host → container, then container → host (`hostIp`); logs both rates under `label`. */
export async function transferBothWays(label: string, netnsPath: string, containerIp: string, hostIp: string, size: number): Promise<[Transfer, Transfer]> {
  const toContainer = await transferToContainer(netnsPath, containerIp, size);
  const fromContainer = await transferFromContainer(netnsPath, hostIp, size);
  console.log(`${label}: to container ${bitRate(toContainer)}, from container ${bitRate(fromContainer)}`);
  return [toContainer, fromContainer];
}
