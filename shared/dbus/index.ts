/**
 * The public face of shared/dbus/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export type { DBusConnection, DBusSignal } from "./client.ts";
export { busSocketsMissing, FIREWALLD_NAME, FIREWALLD_PATH, FIREWALLD_ZONE_INTERFACE, systemBusAddress } from "./system-bus.ts";
