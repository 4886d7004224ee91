/**
 * Helpers for the bandwidth integration tests: ptp + bandwidth configs, a `tc -j` oracle for
 * qdiscs/filters, IFB names computed independently of the plugin, and a timed TCP transfer between
 * the test's (throwaway) host netns and a container netns.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer, type AddressInfo } from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir } from "./tempdir.ts";

/** Upstream's IFB name: `bwp` + 12 hex of sha512(network + containerID). */
export function goIfbName(network: string, containerID: string): string {
  return "bwp" + createHash("sha512").update(network + containerID).digest("hex").slice(0, 12);
}

export interface TcQdisc {
  kind: string;
  handle: string;
  root?: boolean;
  parent?: string;
  options?: Record<string, any>;
}

function tcJson(args: string[]): any[] {
  const r = spawnSync("tc", ["-j", ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tc ${args.join(" ")}: ${r.stderr}`);
  const out = r.stdout.trim();
  return out === "" ? [] : (JSON.parse(out) as any[]);
}

/** `tc -s -j qdisc show dev X` (in the test's netns). */
export function qdiscsOf(dev: string): TcQdisc[] {
  return tcJson(["-s", "qdisc", "show", "dev", dev]);
}

/** `tc -j filter show dev X ingress` (entries with options only, i.e. the key nodes). */
export function ingressFiltersOf(dev: string): any[] {
  return tcJson(["filter", "show", "dev", dev, "ingress"]).filter((f) => f.options?.actions !== undefined);
}

/** Runs `tc ...`, throwing on failure. */
export function tc(...args: string[]): void {
  const r = spawnSync("tc", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tc ${args.join(" ")}: ${r.stderr}`);
}

/** Whether a link exists in the test's netns. */
export function linkExists(name: string): boolean {
  return spawnSync("ip", ["link", "show", "dev", name], { encoding: "utf8" }).status === 0;
}

/** Names of the IFB links in the test's netns. */
export function ifbLinks(): string[] {
  const r = spawnSync("ip", ["-j", "-d", "link", "show", "type", "ifb"], { encoding: "utf8" });
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
    let got = 0, first = 0;
    c.on("data", (d) => { if (got === 0) first = performance.now(); got += d.length; });
    c.on("end", () => { console.log(JSON.stringify({ bytes: got, ms: performance.now() - first })); process.exit(0); });
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
  /** From the first to the last byte at the receiver. */
  ms: number;
  /** bits per second over that span. */
  bitsPerSecond: number;
}

function measured(bytes: number, ms: number): Transfer {
  return { bytes, ms, bitsPerSecond: (bytes * 8 * 1000) / Math.max(ms, 1) };
}

/** Host → container: a server in the container netns, the test process sends `size` bytes. */
export async function transferToContainer(netnsPath: string, containerIp: string, size: number): Promise<Transfer> {
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
    const s = connect(port, containerIp, () => {
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
  const r = JSON.parse(line) as { bytes: number; ms: number };
  return measured(r.bytes, r.ms);
}

/** Container → host: a server in the test process, the container sends `size` bytes to `hostIp`. */
export async function transferFromContainer(netnsPath: string, hostIp: string, size: number): Promise<Transfer> {
  const script = peerScript();
  let first = 0;
  let got = 0;
  const done = new Promise<Transfer>((resolve) => {
    const srv = createServer((c) => {
      c.on("data", (d: Buffer) => {
        if (got === 0) first = performance.now();
        got += d.length;
      });
      c.on("end", () => {
        srv.close();
        resolve(measured(got, performance.now() - first));
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
