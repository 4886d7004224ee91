/**
 * A UDP datagram stream and a recording UDP sink for the portmap stale-conntrack scenario, each a
 * whole process run inside a namespace with `nsenter --net=<path> bun test/harness/portmap-stream.ts …`
 * (nothing in the test process switches namespaces):
 *   stream HOST PORT SRCPORT INTERVAL_MS   sends "seq N" from the FIXED source port every INTERVAL_MS
 *                                          until killed (send errors, e.g. after an ICMP port
 *                                          unreachable, are ignored); prints "ready" once bound
 *   record PORT FILE                       appends `<Date.now()> <peer ip> <payload>` to FILE for
 *                                          every datagram; prints "ready" once listening
 * Spawned helpers: {@link startStream}, {@link startRecorder}; {@link arrivals} reads a record file.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { registerCleanup } from "./cleanup.ts";

const SELF = import.meta.path;

async function stream(host: string, port: number, srcPort: number, intervalMs: number): Promise<void> {
  const sock = await Bun.udpSocket({ hostname: "0.0.0.0", port: srcPort, socket: { data() {}, error() {} } });
  console.log("ready");
  let seq = 0;
  setInterval(() => {
    try {
      sock.send(`seq ${seq++}`, port, host);
    } catch {
      // ECONNREFUSED and friends: keep streaming, as a real client would
    }
  }, intervalMs);
  await new Promise(() => {});
}

async function record(port: number, file: string): Promise<void> {
  await Bun.udpSocket({
    hostname: "0.0.0.0",
    port,
    socket: {
      data(_s, buf, _rport, raddr) {
        appendFileSync(file, `${Date.now()} ${raddr} ${Buffer.from(buf).toString()}\n`);
      },
    },
  });
  console.log("ready");
  await new Promise(() => {});
}

if (import.meta.main) {
  const [cmd, a, b, c, d] = process.argv.slice(2);
  if (cmd === "stream") await stream(a!, Number(b), Number(c), Number(d));
  else if (cmd === "record") await record(Number(a), b!);
}

/** Spawns this file in a netns and waits for "ready"; returns a stopper (also registered as cleanup). */
async function spawnReady(netnsPath: string, args: string[], what: string): Promise<() => void> {
  const p = Bun.spawn(["nsenter", `--net=${netnsPath}`, process.execPath, SELF, ...args], { stdout: "pipe", stderr: "pipe" });
  const stop = (): void => {
    p.kill("SIGKILL");
  };
  const forget = registerCleanup(`portmap ${what} pid ${p.pid}`, stop);
  const reader = p.stdout.getReader();
  const deadline = Date.now() + 15_000;
  let out = "";
  while (!out.includes("ready")) {
    if (Date.now() > deadline) {
      stop();
      throw new Error(`${what} did not start`);
    }
    const { value, done } = await reader.read();
    if (done) throw new Error(`${what} exited: ${await new Response(p.stderr).text()}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return () => {
    stop();
    forget();
  };
}

/** Starts a datagram stream from `srcPort` in the netns at `netnsPath` to host:port. */
export function startStream(netnsPath: string, host: string, port: number, srcPort: number, intervalMs: number): Promise<() => void> {
  return spawnReady(netnsPath, ["stream", host, String(port), String(srcPort), String(intervalMs)], "udp stream");
}

/** Starts a recording sink on UDP `port` in the netns at `netnsPath`, writing to `file`. */
export function startRecorder(netnsPath: string, port: number, file: string): Promise<() => void> {
  return spawnReady(netnsPath, ["record", String(port), file], "udp recorder");
}

export interface Arrival {
  /** Date.now() at reception. */
  at: number;
  from: string;
  payload: string;
}

/** The datagrams a recorder has logged so far. */
export function arrivals(file: string): Arrival[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => {
      const [at, from, ...rest] = l.split(" ");
      return { at: Number(at), from: from ?? "", payload: rest.join(" ") };
    });
}

/** Polls `file` until `n` datagrams arrived or `timeoutMs` passed; returns what arrived. */
export async function waitForArrivals(file: string, n: number, timeoutMs: number): Promise<Arrival[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = arrivals(file);
    if (got.length >= n || Date.now() > deadline) return got;
    await Bun.sleep(25);
  }
}
