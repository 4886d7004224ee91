/**
 * A tiny TCP/UDP echo server and client for the portmap tests, run inside a namespace with
 * `nsenter --net=<path> bun test/harness/portmap-net.ts …` (a whole process per side, so nothing
 * in the test process switches namespaces):
 *   serve tcp|udp PORT TAG       answers every connection / datagram with `TAG from <peer ip>`;
 *                                prints "ready" once listening
 *   send  tcp|udp HOST PORT [SRCPORT] [TIMEOUT_MS]
 *                                prints the reply, or "TIMEOUT" / "ERROR <why>"
 * Spawned helpers: {@link startServer}, {@link sendFrom}.
 */
import { registerCleanup } from "./cleanup.ts";

const SELF = import.meta.path;

async function serve(proto: string, port: number, tag: string): Promise<void> {
  if (proto === "tcp") {
    Bun.listen({
      hostname: "::",
      port,
      socket: {
        open(s) {
          s.end(`${tag} from ${s.remoteAddress.replace(/^::ffff:/, "")}`);
        },
        data() {},
      },
    });
  } else {
    const sock = await Bun.udpSocket({
      hostname: "0.0.0.0",
      port,
      socket: {
        data(s, _buf, rport, raddr) {
          s.send(`${tag} from ${raddr}`, rport, raddr);
        },
      },
    });
    void sock;
  }
  console.log("ready");
  await new Promise(() => {});
}

async function send(proto: string, host: string, port: number, srcPort: number, timeoutMs: number): Promise<void> {
  const timer = setTimeout(() => {
    console.log("TIMEOUT");
    process.exit(0);
  }, timeoutMs);
  if (proto === "tcp") {
    try {
      let got = "";
      await Bun.connect({
        hostname: host,
        port,
        socket: {
          data(_s, d) {
            got += d.toString();
          },
          close() {
            console.log(got);
            clearTimeout(timer);
            process.exit(0);
          },
          connectError(_s, e) {
            console.log(`ERROR ${e.message}`);
            process.exit(0);
          },
        },
      });
    } catch (e) {
      console.log(`ERROR ${(e as Error).message}`);
      process.exit(0);
    }
  } else {
    const sock = await Bun.udpSocket({
      ...(srcPort ? { port: srcPort } : {}),
      socket: {
        data(_s, buf) {
          console.log(Buffer.from(buf).toString());
          clearTimeout(timer);
          process.exit(0);
        },
      },
    });
    sock.send("ping", port, host);
  }
}

if (import.meta.main) {
  const [cmd, proto, a, b, c, d] = process.argv.slice(2);
  if (cmd === "serve") await serve(proto!, Number(a), b ?? "pong");
  else if (cmd === "send") await send(proto!, a!, Number(b), Number(c ?? 0), Number(d ?? 3000));
}

/** Starts a server in the netns at `netnsPath`; resolves once it listens. Returns a stopper. */
export async function startServer(netnsPath: string, proto: "tcp" | "udp", port: number, tag: string): Promise<() => void> {
  const p = Bun.spawn(["nsenter", `--net=${netnsPath}`, process.execPath, SELF, "serve", proto, String(port), tag], { stdout: "pipe", stderr: "pipe" });
  const stop = (): void => {
    p.kill("SIGKILL");
  };
  const forget = registerCleanup(`portmap server pid ${p.pid}`, stop);
  const reader = p.stdout.getReader();
  const deadline = Date.now() + 10_000;
  let out = "";
  while (!out.includes("ready")) {
    if (Date.now() > deadline) throw new Error("server did not start");
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited: ${await new Response(p.stderr).text()}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return () => {
    stop();
    forget();
  };
}

/** Sends one request from the netns at `netnsPath` (undefined: the test's own netns); returns the reply line. */
export function sendFrom(netnsPath: string | undefined, proto: "tcp" | "udp", host: string, port: number, opts: { srcPort?: number; timeoutMs?: number } = {}): string {
  const base = [process.execPath, SELF, "send", proto, host, String(port), String(opts.srcPort ?? 0), String(opts.timeoutMs ?? 3000)];
  const cmd = netnsPath === undefined ? base : ["nsenter", `--net=${netnsPath}`, ...base];
  const r = Bun.spawnSync({ cmd, stdout: "pipe", stderr: "pipe", timeout: 20_000 });
  return r.stdout.toString().trim() || `ERROR ${r.stderr.toString().trim()}`;
}
