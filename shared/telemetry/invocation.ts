/**
 * The invocation being run, as code below skel finds it (docs/observability.md): the phases it
 * marks with {@link phaseStart}/{@link phaseEnd} (entering namespaces, netlink requests by kind, the
 * firewall, IPAM stores, delegates), the address usage an IPAM plugin reports, and the trace
 * context its delegates get. Outside an invocation every function here returns after one test.
 *
 * Which invocation is current is the one piece of call state this module keeps, per thread, and
 * only {@link runInvocation} changes it: a thread runs one call at a time (a plugin process one,
 * a worker thread of the agent one after another, agent/worker-loop.ts), and an in-process
 * delegate runs nested inside its caller's invocation, which waits for it, so the current one is
 * always the innermost invocation running. (node:async_hooks' AsyncLocalStorage would say the
 * same at a price no plugin process should pay: loading it costs 4 ms and 2-4 MiB in a compiled
 * executable, more than a whole loopback ADD's budget.)
 *
 * A leaf module (it imports nothing): the netlink, netns, firewall and config code that marks
 * phases sits deep in every plugin's imports.
 */

/** The phases of a call the code marks, in the order calls usually meet them. */
export const PHASES = ["config", "ipam", "delegate", "netns", "link", "address", "route", "firewall", "tc"] as const;
export type Phase = (typeof PHASES)[number];

/** How many addresses of one range of an allocating IPAM plugin's network are used and free. */
export interface IpamUsage {
  plugin: string;
  network: string;
  /** The range as the config names it: its subnet (`10.1.0.0/24`), or `start-end` when it shares the subnet with another. */
  range: string;
  used: number;
  free: number;
}

/** What an invocation records (call.ts CallTelemetry). */
export interface InvocationRecorder {
  /** A phase begins: its start, or a marker that it is nested in another (then it counts as part of that one). */
  open(): number;
  close(phase: Phase, start: number): void;
  describe(network: string, cniVersion: string): void;
  ipamUsage(u: IpamUsage): void;
  /** The `traceparent` naming this invocation's span. */
  readonly traceParent: string;
}

/** The innermost invocation running in this thread. */
let current: InvocationRecorder | undefined;

/** Runs `fn` as the invocation `recorder` (skel, through call.ts): what is marked meanwhile is its own. */
export async function runInvocation<T>(recorder: InvocationRecorder, fn: () => Promise<T>): Promise<T> {
  const outer = current;
  current = recorder;
  try {
    return await fn();
  } finally {
    current = outer;
  }
}

/** No invocation to record for. */
const NONE = -1;

/** Start of a phase of the current invocation: pass the value to {@link phaseEnd} (in a `finally`). */
export function phaseStart(): number {
  return current?.open() ?? NONE;
}

/** End of the phase begun with `start` ({@link phaseStart}). */
export function phaseEnd(phase: Phase, start: number): void {
  if (start === NONE) return;
  current?.close(phase, start);
}

/** What the current invocation's config says: its network name and cniVersion. */
export function describeCall(network: string, cniVersion: string): void {
  current?.describe(network, cniVersion);
}

/** True inside an invocation that records telemetry (what is only worth computing then). */
export function recordingCall(): boolean {
  return current !== undefined;
}

/** Reports how many addresses of a range the current invocation's IPAM leaves used and free. */
export function reportIpamUsage(u: IpamUsage): void {
  current?.ipamUsage(u);
}

/** The `traceparent` a delegate of the current invocation gets; undefined outside one. */
export function delegateTraceParent(): string | undefined {
  return current?.traceParent;
}
