/**
 * The firewalld backend (upstream firewalld.go): each container address is bound to a firewalld
 * zone (default `trusted`) over D-Bus — `org.fedoraproject.FirewallD1.zone.addSource(zone, "<ip>/32")`
 * on `/org/fedoraproject/FirewallD1`; CHECK calls `querySource` and, unlike upstream, also requires
 * its answer to be true; DEL calls `removeSource` and ignores errors (already removed, firewalld
 * reloaded…). `ZONE_ALREADY_SET` on ADD is success, as upstream.
 *
 * The bus is the D-Bus system bus: `DBUS_SYSTEM_BUS_ADDRESS` from the invocation's environment,
 * else `/var/run/dbus/system_bus_socket` (godbus's rule).
 */
import { annotateError, messageOf } from "../../shared/error/annotate.ts";
import { busSocketsMissing, FIREWALLD_NAME, FIREWALLD_PATH, FIREWALLD_ZONE_INTERFACE } from "../../shared/dbus/system-bus.ts";
import type { FirewalldRules, FirewallTarget } from "./backend.ts";
import type { DBusConnection } from "../../shared/dbus/client.ts";

/**
 * The D-Bus client (shared/dbus/client.ts and the library under it, ten times the rest of this plugin),
 * loaded only when a bus is actually contacted: a separate chunk of the build, so the usual
 * firewall call (no firewalld) never loads or maps it.
 */
async function connectBus(address: string): Promise<DBusConnection> {
  const client = await import("../../shared/dbus/client.ts");
  return client.connectBus(address);
}

const ZONE_ALREADY_SET = "ZONE_ALREADY_SET";

/** Upstream isFirewalldRunning: the bus answers GetNameOwner for firewalld's well-known name. */
export async function isFirewalldRunning(address: string): Promise<boolean> {
  // The usual node has no system bus socket at all: no need to load the D-Bus client to find out.
  if (busSocketsMissing(address)) return false;
  let conn: DBusConnection | undefined;
  try {
    conn = await connectBus(address);
    await conn.call({
      destination: "org.freedesktop.DBus",
      path: "/org/freedesktop/DBus",
      interface: "org.freedesktop.DBus",
      member: "GetNameOwner",
      signature: "s",
      body: [FIREWALLD_NAME],
    });
    return true;
  } catch {
    return false;
  } finally {
    conn?.close();
  }
}

function zoneCall(conn: DBusConnection, member: string, zone: string, source: string): Promise<unknown> {
  return conn.call({ destination: FIREWALLD_NAME, path: FIREWALLD_PATH, interface: FIREWALLD_ZONE_INTERFACE, member, signature: "ss", body: [zone, source] });
}

/** The plugin in the firewalld backend, on the bus at `address` (connected for each operation). */
export function firewalldBackend(address: string): FirewalldRules {
  const withBus = async <T>(fn: (conn: DBusConnection) => Promise<T>): Promise<T> => {
    const conn = await connectBus(address);
    try {
      return await fn(conn);
    } finally {
      conn.close();
    }
  };
  return {
    backend: "firewalld",
    // Whether the bus answers is known only by calling it; a teardown that cannot reach it removes
    // nothing, as upstream.
    available: () => true,
    async setup(t: FirewallTarget) {
      if (t.addrs.length === 0) return;
      await withBus(async (conn) => {
        for (const a of t.addrs) {
          try {
            await zoneCall(conn, "addSource", t.conf.zone, a.host);
          } catch (err) {
            if (!messageOf(err).includes(ZONE_ALREADY_SET)) throw annotateError(`failed to add the address ${a.host} to ${t.conf.zone} zone`, err);
          }
        }
      });
    },
    async check(t: FirewallTarget) {
      if (t.addrs.length === 0) return [];
      return withBus(async (conn) => {
        const problems: string[] = [];
        for (const a of t.addrs) {
          const context = `failed to find the address ${a.host} in ${t.conf.zone} zone`;
          let bound: unknown;
          try {
            bound = await zoneCall(conn, "querySource", t.conf.zone, a.host);
          } catch (err) {
            throw annotateError(context, err);
          }
          if (bound !== true) problems.push(context);
        }
        return problems;
      });
    },
    async teardown(t: FirewallTarget) {
      if (t.addrs.length === 0) return;
      try {
        await withBus(async (conn) => {
          for (const a of t.addrs) {
            try {
              await zoneCall(conn, "removeSource", t.conf.zone, a.host);
            } catch {
              // upstream ignores removal errors (not bound any more, zone gone, …)
            }
          }
        });
      } catch {
        // bus unreachable: nothing we can remove; DEL must not fail (upstream ignores these too)
      }
    },
    async gc() {
      // The zone sources carry no owner: GC takes their addresses from ADD's records (gc.ts).
    },
  };
}
