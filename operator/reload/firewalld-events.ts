/**
 * firewalld's side of `cni-plugins reload --watch`: a connection to the D-Bus system bus (the
 * firewall plugin's client, shared/dbus/client.ts) subscribed to firewalld's `Reloaded`
 * signal (`firewall-cmd --reload` drops the runtime zone sources the firewall plugin added, and
 * with firewalld's iptables backend every rule) and to the bus's `NameOwnerChanged` for firewalld's
 * name (a started or restarted firewalld begins from its permanent configuration).
 *
 * firewalld owns its name before it has finished starting (it then still flushes the tables it
 * starts from, and loads its zones): a started firewalld is reported once it owns its name and
 * again once its `state` reads RUNNING.
 *
 * The connection is kept: when the bus goes away (dbus restarted) it is made again, retried with a
 * delay growing from a tenth of a second to one (also while the bus socket does not exist). Every
 * new connection after the first reports a change too (firewalld may have restarted meanwhile).
 */
import { messageOf } from "../../shared/error/annotate.ts";
import type { DBusConnection, DBusSignal } from "../../shared/dbus/client.ts";
import { busSocketsMissing, FIREWALLD_NAME, FIREWALLD_PATH } from "../../shared/dbus/system-bus.ts";

const DBUS = { destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus" };
const RELOADED_MATCH = `type='signal',sender='${FIREWALLD_NAME}',path='${FIREWALLD_PATH}',interface='${FIREWALLD_NAME}',member='Reloaded'`;
const OWNER_MATCH = `type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='${FIREWALLD_NAME}'`;

/** Delays between connection attempts (and looks for a bus socket that does not exist). */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 1000;
/** How often, and how long, a starting firewalld is asked whether it is done. */
const STATE_POLL_MS = 200;
const STATE_WAIT_MS = 60_000;

export interface FirewalldEventsDeps {
  connect(address: string): Promise<DBusConnection>;
  busMissing(address: string): boolean;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const systemFirewalldEventsDeps: FirewalldEventsDeps = {
  connect: async (address) => (await import("../../shared/dbus/client.ts")).connectBus(address),
  busMissing: busSocketsMissing,
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        signal.removeEventListener("abort", done);
        resolve();
      }
      signal.addEventListener("abort", done, { once: true });
    }),
};

/** Resolves once `signal` aborts (at once when it has). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** Waits until firewalld's `state` property reads RUNNING; false when it does not (gone, timed out, stopped). */
async function whenRunning(conn: DBusConnection, signal: AbortSignal, deps: FirewalldEventsDeps): Promise<boolean> {
  const end = Date.now() + STATE_WAIT_MS;
  let closed = false;
  conn.onClose(() => void (closed = true));
  while (!signal.aborted && !closed && Date.now() < end) {
    try {
      const state = await conn.call({ destination: FIREWALLD_NAME, path: FIREWALLD_PATH, interface: "org.freedesktop.DBus.Properties", member: "Get", signature: "ss", body: [FIREWALLD_NAME, "state"] });
      if (JSON.stringify(state).includes("RUNNING")) return true;
    } catch {
      // not answering yet
    }
    await deps.sleep(STATE_POLL_MS, signal);
  }
  return false;
}

/** What a signal means for the watcher, or undefined when it needs nothing. */
export function firewalldChange(s: DBusSignal): string | undefined {
  if (s.interface === FIREWALLD_NAME && s.member === "Reloaded") return "firewalld reloaded";
  if (s.interface === DBUS.interface && s.member === "NameOwnerChanged" && s.body[0] === FIREWALLD_NAME && typeof s.body[2] === "string" && s.body[2] !== "") return "firewalld started";
  return undefined;
}

/**
 * Watches firewalld on the bus at `address` until `signal` aborts (see module doc); `onChange` is
 * called with what happened, `log` with the connection's ups and downs. Resolves once stopped.
 */
export async function watchFirewalld(address: string, onChange: (why: string) => void, log: (line: string) => void, signal: AbortSignal, deps = systemFirewalldEventsDeps): Promise<void> {
  let delay = RETRY_FIRST_MS;
  let connectedBefore = false;
  let lastTrouble = "";
  const trouble = (line: string): void => {
    if (line !== lastTrouble) log(line);
    lastTrouble = line;
  };
  while (!signal.aborted) {
    if (deps.busMissing(address)) {
      trouble(`no D-Bus system bus at ${address}: firewalld reloads are not watched until it appears`);
      await deps.sleep(delay, signal);
      delay = Math.min(delay * 2, RETRY_MAX_MS);
      continue;
    }
    let conn: DBusConnection | undefined;
    try {
      conn = await deps.connect(address);
      const closed = new Promise<void>((resolve) => conn!.onClose(() => resolve()));
      const c = conn;
      conn.onSignal((s) => {
        const why = firewalldChange(s);
        if (why === undefined) return;
        onChange(why);
        if (why === "firewalld started") void whenRunning(c, signal, deps).then((ok) => ok && onChange("firewalld running"));
      });
      for (const rule of [RELOADED_MATCH, OWNER_MATCH]) await conn.call({ ...DBUS, member: "AddMatch", signature: "s", body: [rule] });
      lastTrouble = "";
      log(`watching firewalld on the D-Bus system bus ${address}`);
      if (connectedBefore) onChange("D-Bus connection made again");
      connectedBefore = true;
      delay = RETRY_FIRST_MS;
      await Promise.race([closed, untilAborted(signal)]);
      if (signal.aborted) return;
      trouble(`lost the D-Bus connection to ${address}; connecting again`);
    } catch (err) {
      trouble(`cannot watch firewalld on the D-Bus system bus ${address}: ${messageOf(err)}; trying again`);
    } finally {
      conn?.close();
    }
    await deps.sleep(delay, signal);
    delay = Math.min(delay * 2, RETRY_MAX_MS);
  }
}
