/**
 * Where the D-Bus system bus is, and the names firewalld answers to on it: what the firewall
 * plugin's firewalld backend and the reload watcher (which listens for firewalld's reloads) share.
 * Nothing here loads the D-Bus client (./client.ts, a chunk of its own).
 */
import { exists } from "../sys/file.ts";

/** godbus's default system bus address. */
export const DEFAULT_SYSTEM_BUS = "unix:path=/var/run/dbus/system_bus_socket";
export const FIREWALLD_NAME = "org.fedoraproject.FirewallD1";
export const FIREWALLD_PATH = "/org/fedoraproject/FirewallD1";
export const FIREWALLD_ZONE_INTERFACE = "org.fedoraproject.FirewallD1.zone";

/** The system bus address for an invocation's environment: `DBUS_SYSTEM_BUS_ADDRESS`, else godbus's default. */
export function systemBusAddress(env: Readonly<Record<string, string | undefined>>): string {
  return env.DBUS_SYSTEM_BUS_ADDRESS || DEFAULT_SYSTEM_BUS;
}

/**
 * True when no entry of a D-Bus address list can connect because each is a `unix:path=` socket
 * that does not exist — decided without loading the D-Bus client.
 */
export function busSocketsMissing(address: string): boolean {
  return address.split(";").every((entry) => {
    const m = /^unix:(?:.*,)?path=([^,]+)/.exec(entry);
    return m !== null && !exists(decodeURIComponent(m[1]!));
  });
}
