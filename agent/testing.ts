/**
 * Test support: an agent worker thread (the real call loop, worker-loop.ts) whose "plugin" is a
 * scripted stand-in chosen by the call's CNI_TEST_MODE, so tests can make a call misbehave in ways no
 * real plugin does. Used only as a Worker entry by agent/*.test.ts.
 *   echo      stdout: stdin and CNI_TEST_MARK; stderr: "to stderr"; status from CNI_TEST_STATUS
 *   env       stdout: the call's environment as JSON
 *   cwd       stdout: the thread's working directory and umask
 *   sleep     waits CNI_TEST_MS ms, then as echo without stdin
 *   span      waits CNI_TEST_MS ms; stdout: when it started and ended (ms since the epoch) as JSON
 *   throw     an exception thrown later from a timer (uncaught)
 *   reject    a promise rejected and never handled
 *   exit      the thread exits under the call
 *   netfilter opens and closes a NETLINK_NETFILTER socket; stdout: its descriptor
 */
import { serveCalls } from "./worker-loop.ts";
import { NETLINK_NETFILTER } from "../shared/netlink/constants/nfnetlink.ts";
import { openNetlinkSocket } from "../shared/netlink/kernel-transport.ts";
import { getcwd } from "../shared/sys/libc.ts";
import { setUmask } from "../shared/sys/process.ts";

declare const self: Worker;

const never = new Promise<number>(() => {});

serveCalls(
  async (_argv, io) => {
    const mode = io.env.CNI_TEST_MODE ?? "echo";
    switch (mode) {
      case "echo": {
        const stdin = new TextDecoder().decode(await io.readStdin());
        io.stdout(`${stdin}|${io.env.CNI_TEST_MARK ?? ""}`);
        io.stderr("to stderr");
        return Number(io.env.CNI_TEST_STATUS ?? "0");
      }
      case "env":
        io.stdout(JSON.stringify(io.env));
        return 0;
      case "cwd": {
        const mask = setUmask(0);
        setUmask(mask);
        io.stdout(JSON.stringify({ cwd: getcwd(), umask: mask }));
        return 0;
      }
      case "sleep":
        await Bun.sleep(Number(io.env.CNI_TEST_MS ?? "100"));
        io.stdout(`slept|${io.env.CNI_TEST_MARK ?? ""}`);
        return 0;
      case "span": {
        const start = Date.now();
        await Bun.sleep(Number(io.env.CNI_TEST_MS ?? "100"));
        io.stdout(JSON.stringify({ start, end: Date.now() }));
        return 0;
      }
      case "throw":
        setTimeout(() => {
          throw new Error("thrown from a timer");
        }, 1);
        return never;
      case "reject":
        void Promise.reject(new Error("rejected, never handled"));
        return never;
      case "exit":
        process.exit(3);
        return never;
      case "netfilter": {
        const sock = openNetlinkSocket(NETLINK_NETFILTER);
        io.stdout(String(sock.fd));
        sock.close();
        return 0;
      }
      default:
        throw new Error(`unknown CNI_TEST_MODE ${mode}`);
    }
  },
  () => ["0.4.0", "1.0.0"],
  self,
);
self.postMessage({ t: "ready" });
