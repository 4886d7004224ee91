/**
 * Where cluster-local keeps a network's reservations in etcd, under `<prefix><network>/`:
 *
 * - `ips/<address>` → `{"containerID","ifname","node"}`: the address is taken. Its creation is the
 *   allocation: a transaction creates it only if it does not exist.
 * - `owners/<containerID>/<ifname>` → `{"containerID","ifname","node","ips":[…]}`: what an attachment
 *   holds (one address per range set), created in the same transaction as its `ips/` keys, so all of
 *   them carry the same create revision; ADD retries find it, DEL and GC release exactly those keys.
 * - `last_reserved_ip.<range set index>` → the address last reserved from that range set, where the
 *   next allocation starts (host-local's file of the same name).
 *
 * Container IDs and network names cannot contain `/` (CNI's ID pattern), nor can interface names.
 */
import { formatIP, type IPAddr } from "../../shared/ip/addr.ts";
import { prefixEnd } from "./etcd/wire.ts";

/** Who holds an address: the value of an `ips/` key. */
export interface Reservation {
  containerID: string;
  ifname: string;
  node: string;
}

/** What an attachment holds: the value of an `owners/` key. */
export interface OwnerRecord extends Reservation {
  /** Addresses, one per range set in config order. */
  ips: string[];
}

export class NetworkKeys {
  /** `<prefix><network>/` */
  readonly root: string;
  readonly ipsPrefix: string;
  readonly ownersPrefix: string;

  constructor(prefix: string, network: string) {
    this.root = `${prefix}${network}/`;
    this.ipsPrefix = `${this.root}ips/`;
    this.ownersPrefix = `${this.root}owners/`;
  }

  ip(ip: IPAddr): string {
    return `${this.ipsPrefix}${formatIP(ip)}`;
  }

  owner(containerID: string, ifname: string): string {
    return `${this.ownersPrefix}${containerID}/${ifname}`;
  }

  hint(rangeSetIndex: number): string {
    return `${this.root}last_reserved_ip.${rangeSetIndex}`;
  }

  /** The range of every key under `prefix`. */
  static under(prefix: string): { key: string; rangeEnd: string } {
    return { key: prefix, rangeEnd: prefixEnd(prefix) };
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A stored reservation, or undefined when the value is not one (written by something else). */
export function parseReservation(value: string): Reservation | undefined {
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!isRecord(v) || typeof v.containerID !== "string" || typeof v.ifname !== "string" || typeof v.node !== "string") return undefined;
  return { containerID: v.containerID, ifname: v.ifname, node: v.node };
}

/** A stored owner record, or undefined when the value is not one. */
export function parseOwnerRecord(value: string): OwnerRecord | undefined {
  const r = parseReservation(value);
  if (r === undefined) return undefined;
  const ips = (JSON.parse(value) as { ips?: unknown }).ips;
  if (!Array.isArray(ips) || !ips.every((x) => typeof x === "string")) return undefined;
  return { ...r, ips: ips as string[] };
}

export function reservationValue(r: Reservation): string {
  return JSON.stringify({ containerID: r.containerID, ifname: r.ifname, node: r.node });
}

export function ownerValue(o: OwnerRecord): string {
  return JSON.stringify({ containerID: o.containerID, ifname: o.ifname, node: o.node, ips: o.ips });
}
