/**
 * The CNI data model shared by every plugin: the current-version Result (spec 1.1.0, which plugins
 * build internally; skel converts it to the config's cniVersion), the invocation arguments, and the
 * plugin spec each plugin exports.
 */

import type { LockWaiter } from "../sys/lock-waiter.ts";

/** Spec 1.x interface entry. */
export interface Interface {
  name: string;
  mac?: string;
  mtu?: number;
  sandbox?: string;
  socketPath?: string;
  pciID?: string;
}

/** Spec 1.x IP entry. `address` is CIDR with host bits kept (`10.1.2.3/24`). */
export interface IPConfig {
  address: string;
  gateway?: string;
  /** Index into `interfaces`. */
  interface?: number;
}

/** A route. `dst` is a CIDR; the optional fields exist since upstream v1.6.0. */
export interface Route {
  dst: string;
  gw?: string;
  mtu?: number;
  advmss?: number;
  priority?: number;
  table?: number;
  scope?: number;
}

export interface DNS {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

/**
 * Marks a result to be printed exactly as built, only relabelled with the config's cniVersion
 * (upstream loopback's quirk: a 1.x-shaped result labelled 0.x). See {@link printAsIs}.
 */
export const PRINT_AS_IS: unique symbol = Symbol("cni.printAsIs");

/**
 * The spec version a result was parsed from when it came in as a prevResult. Printing a result in
 * the family it came from skips the "no valid IP addresses" refusal, as upstream does when the
 * versions already match (it does not convert at all then). Set (non-enumerable) by parsePrevResult.
 */
export const PARSED_FROM: unique symbol = Symbol("cni.parsedFrom");

/** The current-version result (1.0.0 / 1.1.0 shape); `cniVersion` is set by whoever prints it. */
export interface Result {
  [PRINT_AS_IS]?: true;
  [PARSED_FROM]?: string;
  cniVersion?: string;
  interfaces?: Interface[];
  ips?: IPConfig[];
  routes?: Route[];
  dns?: DNS;
}

/** CNI_COMMAND values this suite knows. */
export type Command = "ADD" | "DEL" | "CHECK" | "STATUS" | "GC" | "VERSION";

/** The verbs passed on to another plugin that return no result (ADD has {@link Delegate.add}). */
export type DelegatedCommand = "DEL" | "CHECK" | "STATUS" | "GC";

/**
 * Delegation to another plugin (IPAM) named by its CNI type, with the delegating invocation's inputs
 * (config bytes, environment with CNI_COMMAND replaced, CNI_PATH, stderr, scope), as libcni `invoke`
 * does it: the file found in CNI_PATH runs in-process when it is this build and the call was given
 * this build's plugins, else it is executed (./invoke.ts; ./delegate.ts makes one).
 */
export interface Delegate {
  /** ADD: the delegate's result in the current type (a missing cniVersion gets the config's). */
  add(type: string): Promise<Result>;
  /** DEL, CHECK, STATUS or GC: success, or the delegate's error (its code kept). */
  run(type: string, command: DelegatedCommand): Promise<void>;
}

/**
 * Everything one invocation hands a plugin handler. Handlers read their inputs only from here —
 * never from `process.env` — so a delegate can run in-process with identical inputs.
 */
export interface CmdArgs {
  command: Command;
  /** CNI_CONTAINERID ("" for STATUS/GC). */
  containerID: string;
  /** CNI_NETNS as given ("" when unset). */
  netns: string;
  /** CNI_IFNAME ("" for STATUS/GC). */
  ifName: string;
  /** CNI_ARGS raw string ("" when unset). */
  args: string;
  /** CNI_PATH raw string. */
  path: string;
  /** The raw stdin bytes (the network config). */
  stdinData: Uint8Array;
  /** stdin parsed as a JSON object (skel guarantees an object with a valid `name`). */
  config: Record<string, unknown>;
  /** The config's cniVersion ("0.1.0" when missing). */
  cniVersion: string;
  /** The full environment of this invocation (passed to delegates unchanged). */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Where this invocation's diagnostics go: the process's stderr, or the resident agent's reply to
   * the caller. Plugin code never writes to file descriptor 2 itself.
   */
  stderr(text: string): void;
  /**
   * What ends this invocation's waits early: nothing in a plugin process (PROCESS_SCOPE), its
   * caller's departure or the agent's limit in the resident agent (./call-scope.ts).
   */
  scope: CallScope;
  /** How this invocation passes a verb on to another plugin (IPAM), with these inputs. */
  delegate: Delegate;
}

/** A handler may be synchronous; async handlers are allowed but must not enter a netns across await. */
export type Handler<R> = (args: CmdArgs) => R | Promise<R>;

/** What one plugin exports; registry/registry.ts maps the CNI type name to this. */
export interface PluginSpec {
  /** CNI type name: the executable name. */
  name: string;
  /** Spec versions this plugin accepts, ascending. */
  versions: readonly string[];
  add: Handler<Result>;
  del: Handler<void>;
  check?: Handler<void>;
  status?: Handler<void>;
  gc?: Handler<void>;
}

/** Returns `result` marked to be printed unconverted, relabelled with the config's cniVersion. */
export function printAsIs(result: Result): Result {
  return { ...result, [PRINT_AS_IS]: true };
}

/**
 * What ends one invocation's waits: the scope of a call (call-scope.ts, docs/resident.md "Failure
 * modes and limits").
 */
export interface CallScope {
  /** Aborted (with a CallEndedError of call-scope.ts as its reason) when the call is ended; never in a plugin process. */
  readonly signal: AbortSignal;
  /**
   * How a synchronous wait (a lock held by someone else) sleeps between its tries (shared/sys
   * fd-lock.ts): waking at once when the call is ended, and then throwing its CallEndedError.
   * Undefined in a plugin process, whose blocking waits end with the process.
   */
  readonly lockWaiter: LockWaiter | undefined;
  /**
   * Runs `wait`, a wait on another process (a delegate plugin, the dhcp daemon), telling the agent
   * so: calls are not held back for a thread that only waits. `wait` gets the signal and must end
   * (kill its child, close its connection) when it is aborted.
   */
  waitOn<T>(wait: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

/** One live attachment as GC receives it in its attachment list. */
export interface ValidAttachment {
  containerID: string;
  ifName: string;
}

/**
 * Where one invocation reads and writes: the real process, an in-process delegate call, or a
 * request of the resident agent (whose stdin arrives from the caller on demand, hence a promise).
 */
export interface PluginIO {
  env: Readonly<Record<string, string | undefined>>;
  readStdin(): Uint8Array | Promise<Uint8Array>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** What ends the invocation's waits early (call-scope.ts); a plugin process has none. */
  scope?: CallScope;
}

/** This build's plugin of a CNI type, or undefined when the build has none (registry/registry.ts lookupPlugin). */
export type SpecLookup = (name: string) => PluginSpec | Promise<PluginSpec> | undefined;

/**
 * What a delegation (delegate.ts, invoke.ts) may run in-process: the plugins of this build and how
 * to run one (skel makes it from what registry/registry.ts runPluginCall gives runPlugin; absent in
 * tests and in the operator's commands, which then execute every delegate).
 */
export interface InProcessPlugins {
  readonly lookup: SpecLookup;
  /** Runs `spec` as a delegate in-process, with these same plugins to delegate to (skel's runPlugin). */
  readonly run: (spec: PluginSpec, io: PluginIO) => Promise<number>;
}

/** The inputs of the delegating invocation that a delegate gets. */
export type DelegateInputs = Pick<CmdArgs, "path" | "env" | "stdinData" | "cniVersion" | "stderr" | "scope">;
