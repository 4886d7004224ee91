/**
 * A minimal promise API over the D-Bus system bus (the firewall plugin's firewalld backend, the
 * reload watcher's firewalld signals), on the pure-JS `@homebridge/dbus-native` client. Its users
 * import this module dynamically, so the build puts it and the library in a chunk of their own that
 * only a call contacting a bus loads.
 * Every call has a timeout: a wedged bus must not hang a CNI call.
 */

/** How long one call may take. */
const CALL_TIMEOUT_MS = 10_000;

export interface DBusCall {
  destination: string;
  path: string;
  interface: string;
  member: string;
  /** D-Bus signature of `body` ("ss"); omitted for no arguments. */
  signature?: string;
  body?: unknown[];
}

/** A D-Bus error reply (`name` is the error name, e.g. org.fedoraproject.FirewallD1.Exception). */
export class DBusError extends Error {
  override name = "DBusError";
  readonly errorName: string;
  constructor(errorName: string, message: string) {
    super(`${errorName}: ${message}`);
    this.errorName = errorName;
  }
}

/** A signal received on the connection (after an AddMatch that selects it). */
export interface DBusSignal {
  sender: string;
  path: string;
  interface: string;
  member: string;
  body: unknown[];
}

export interface DBusConnection {
  call(msg: DBusCall): Promise<unknown>;
  /** Calls `fn` for every signal the bus routes to this connection (resident watchers only). */
  onSignal(fn: (s: DBusSignal) => void): void;
  /** Calls `fn` once when the connection ends or fails (the bus went away, or {@link close}). */
  onClose(fn: (err: Error | undefined) => void): void;
  close(): void;
}

/** D-Bus message type of a signal (dbus-native's constants.messageType.signal). */
const SIGNAL = 4;

interface NativeBus {
  invoke(msg: Record<string, unknown>, cb: (err: unknown, ...res: unknown[]) => void): void;
  connection: { on(ev: string, fn: (e: unknown) => void): void; end(): void };
}

function toError(err: unknown): Error {
  if (err instanceof Error) return err;
  if (typeof err === "object" && err !== null) {
    const e = err as { name?: unknown; message?: unknown; body?: unknown };
    const message = typeof e.message === "string" ? e.message : Array.isArray(e.body) ? String(e.body[0] ?? "") : "";
    return new DBusError(typeof e.name === "string" ? e.name : "org.freedesktop.DBus.Error.Failed", message);
  }
  return new DBusError("org.freedesktop.DBus.Error.Failed", String(err));
}

/** Connects to the bus at `address` (a D-Bus address string such as `unix:path=/run/dbus/…`). */
export function connectBus(address: string): DBusConnection {
  const lib = require("@homebridge/dbus-native") as { createClient(opts: Record<string, unknown>): NativeBus };
  const bus = lib.createClient({ busAddress: address });
  let failure: Error | undefined;
  let ended = false;
  const waiting = new Set<(e: Error) => void>();
  const closers: ((err: Error | undefined) => void)[] = [];
  const end = (err: Error | undefined): void => {
    if (ended) return;
    ended = true;
    for (const fn of closers.splice(0)) fn(err);
  };
  bus.connection.on("error", (e) => {
    failure = toError(e);
    for (const reject of waiting) reject(failure);
    waiting.clear();
    end(failure);
  });
  bus.connection.on("end", () => {
    failure ??= new DBusError("org.freedesktop.DBus.Error.Disconnected", "the bus closed the connection");
    for (const reject of waiting) reject(failure);
    waiting.clear();
    end(undefined);
  });
  return {
    onSignal(fn) {
      bus.connection.on("message", (m) => {
        const msg = m as { type?: number; sender?: string; path?: string; interface?: string; member?: string; body?: unknown[] };
        if (msg.type !== SIGNAL) return;
        fn({ sender: msg.sender ?? "", path: msg.path ?? "", interface: msg.interface ?? "", member: msg.member ?? "", body: msg.body ?? [] });
      });
    },
    onClose(fn) {
      if (ended) fn(failure);
      else closers.push(fn);
    },
    call(msg) {
      if (failure !== undefined) return Promise.reject(failure);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(reject);
          reject(new DBusError("org.freedesktop.DBus.Error.Timeout", `no reply to ${msg.interface}.${msg.member} within ${CALL_TIMEOUT_MS} ms`));
        }, CALL_TIMEOUT_MS);
        const done = (fn: () => void): void => {
          clearTimeout(timer);
          waiting.delete(reject);
          fn();
        };
        waiting.add((e) => done(() => reject(e)));
        bus.invoke({ ...msg }, (err, res) => done(() => (err ? reject(toError(err)) : resolve(res))));
      });
    },
    close() {
      try {
        bus.connection.end();
      } catch {
        // already closed
      }
      end(undefined);
    },
  };
}
