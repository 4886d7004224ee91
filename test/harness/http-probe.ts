/**
 * A hostPort's HTTP service and its watcher, for the `cni-plugins reload` tests:
 * - `serve PORT` (run in a container's netns): answers every request with 200 "ok";
 * - `probe HOST PORT` (run in the node's netns): a new connection every 20 ms (never a kept-alive
 *   one: a NAT binding of an open connection outlives a flushed rule), printing `up <ms>` or
 *   `down <ms>` (epoch milliseconds) whenever the answer changes.
 * {@link startHttpServer} and {@link startHttpProbe} run them through nsenter; the probe's
 * transitions are collected so a test can ask when the port answered again.
 */
import { registerCleanup } from "./cleanup.ts";

const SELF = import.meta.path;

async function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    let got = "";
    let settled = false;
    const done = (ok: boolean, s?: { end(): void }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s?.end();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 300);
    Bun.connect({
      hostname: host,
      port,
      socket: {
        open: (s) => void s.write(`GET / HTTP/1.0\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
        data: (s, d) => {
          got += d.toString();
          if (/^HTTP\/1\.[01] 200/.test(got)) done(true, s);
        },
        close: () => done(/^HTTP\/1\.[01] 200/.test(got)),
        error: () => done(false),
        connectError: () => done(false),
      },
    }).catch(() => done(false));
  });
}

if (import.meta.main) {
  const [cmd, a, b] = process.argv.slice(2);
  if (cmd === "serve") {
    Bun.serve({ hostname: "0.0.0.0", port: Number(a), fetch: () => new Response("ok") });
    console.log("ready");
  } else if (cmd === "probe") {
    let last: boolean | undefined;
    for (;;) {
      const up = await answers(a!, Number(b));
      if (up !== last) console.log(`${up ? "up" : "down"} ${Date.now()}`);
      last = up;
      await Bun.sleep(20);
    }
  }
}

/** Starts the HTTP service in `netnsPath` on `port`; resolves once it listens. Returns a stopper. */
export async function startHttpServer(netnsPath: string, port: number): Promise<() => void> {
  const p = Bun.spawn(["nsenter", `--net=${netnsPath}`, process.execPath, SELF, "serve", String(port)], { stdout: "pipe", stderr: "pipe" });
  const forget = registerCleanup(`http server pid ${p.pid}`, () => p.kill("SIGKILL"));
  const reader = p.stdout.getReader();
  let out = "";
  while (!out.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`http server exited: ${await new Response(p.stderr).text()}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return () => {
    p.kill("SIGKILL");
    forget();
  };
}

export interface HttpProbe {
  /** Whether the last answer was a 200. */
  readonly up: boolean;
  /**
   * Waits until the port answers; `ms`: how long after `from` (epoch ms, the fault's end) it
   * answered again (0: it already did), `wentDown`: whether it stopped answering at all since
   * `brokenSince` (the fault's start), `outageMs`: from the first failed probe since then to the
   * answer. Rejects after `timeoutMs`.
   */
  upAgain(brokenSince: number, from: number, timeoutMs: number): Promise<{ ms: number; wentDown: boolean; outageMs: number }>;
  stop(): void;
}

/** Probes `host:port` from `netnsPath` (see module doc). */
export async function startHttpProbe(netnsPath: string, host: string, port: number): Promise<HttpProbe> {
  const p = Bun.spawn(["nsenter", `--net=${netnsPath}`, process.execPath, SELF, "probe", host, String(port)], { stdout: "pipe", stderr: "ignore" });
  const forget = registerCleanup(`http probe pid ${p.pid}`, () => p.kill("SIGKILL"));
  const events: { up: boolean; at: number }[] = [];
  void (async () => {
    let buf = "";
    for await (const chunk of p.stdout) {
      buf += new TextDecoder().decode(chunk);
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const [state, at] = buf.slice(0, nl).split(" ");
        buf = buf.slice(nl + 1);
        events.push({ up: state === "up", at: Number(at) });
      }
    }
  })();
  const deadline = Date.now() + 5000;
  while (events.length === 0 && Date.now() < deadline) await Bun.sleep(10);
  return {
    get up() {
      return events.at(-1)?.up ?? false;
    },
    async upAgain(brokenSince, from, timeoutMs) {
      const end = Date.now() + timeoutMs;
      // Two probe rounds at least, so a breakage before `from` has been seen.
      while (Date.now() < from + 60) await Bun.sleep(10);
      for (;;) {
        const last = events.at(-1);
        if (last?.up) {
          const down = events.find((e) => !e.up && e.at >= brokenSince);
          if (down === undefined) return { ms: 0, wentDown: false, outageMs: 0 };
          return { ms: Math.max(0, last.at - from), wentDown: true, outageMs: last.at - down.at };
        }
        if (Date.now() > end) throw new Error(`${host}:${port} did not answer again within ${timeoutMs} ms`);
        await Bun.sleep(10);
      }
    },
    stop() {
      p.kill("SIGKILL");
      forget();
    },
  };
}
