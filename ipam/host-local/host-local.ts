/**
 * host-local: an IPAM plugin that allocates addresses from configured ranges and records each
 * reservation as a file under `<dataDir>/<network>/` (upstream plugins/ipam/host-local/main.go).
 * The store is byte-compatible with the Go plugin and shares its flock, so
 * both can serve the same node at once.
 *
 * ADD allocates one address per range set (requested addresses first, else round robin) and
 * returns them with the config routes and the resolvConf DNS. CHECK succeeds when the attachment
 * holds a reservation. DEL releases everything the attachment holds and tolerates unknown IDs.
 *
 * Beyond upstream: STATUS fails with code 50 when a range set is exhausted; GC releases the
 * reservations of attachments the runtime no longer lists, and empty or unreadable reservation
 * files; CHECK/DEL/ADD find an attachment's files through a verified owner index instead of reading
 * every file; the store is crash-safe and never follows links (store/disk.ts); point-to-point
 * subnets and `exclude` (allocator/range.ts). Config errors are code 7 (upstream 999) with
 * upstream's text. The full list is DIFFERENCES.md.
 */
import { CniError, InternalError, PluginUnavailableError, messageOf } from "../../shared/cni/errors.ts";
import type { CmdArgs, IPConfig, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { formatIP, type IPAddr } from "../../shared/ip/addr.ts";
import { formatCIDR } from "../../shared/ip/cidr.ts";
import { IPAllocator } from "./allocator/allocator.ts";
import { formatRangeSet, rangeSetContains } from "./allocator/range-set.ts";
import { loadIPAMConfig, resultRoutes } from "./config.ts";
import { parseResolvConf } from "./dns.ts";
import { collectGarbage, parseValidAttachments } from "./gc.ts";
import { hasFreeAddress } from "./status.ts";
import { DiskStore } from "./store/disk.ts";

function add(args: CmdArgs): Result {
  const conf = loadIPAMConfig(args.config, args.args);
  const result: Result = {};
  if (conf.resolvConf !== undefined) result.dns = parseResolvConf(conf.resolvConf);
  const routes = resultRoutes(conf.routes);

  const store = DiskStore.open(conf.name, conf.dataDir);
  try {
    // Requested addresses not yet matched to a range set (insertion order = source order).
    const requested = new Map<string, IPAddr>(conf.requestedIPs.map((ip) => [formatIP(ip), ip]));
    const done: IPAllocator[] = [];
    const ips: IPConfig[] = [];
    const releaseDone = () => {
      for (const a of done) {
        try {
          a.release(args.containerID, args.ifName);
        } catch {
          // best effort, as upstream
        }
      }
    };
    for (const [idx, set] of conf.rangeSets.entries()) {
      const allocator = new IPAllocator(set, store, idx);
      let want: IPAddr | undefined;
      for (const [text, ip] of requested) {
        if (rangeSetContains(set, ip)) {
          want = ip;
          requested.delete(text);
          break;
        }
      }
      let got;
      try {
        got = allocator.get(args.containerID, args.ifName, want);
      } catch (err) {
        releaseDone();
        const msg = `failed to allocate for range ${idx}: ${messageOf(err)}`;
        throw err instanceof CniError ? new CniError(err.code, msg, { cause: err }) : new InternalError(msg, { cause: err });
      }
      done.push(allocator);
      ips.push({ address: formatCIDR(got.address), ...(got.gateway === undefined ? {} : { gateway: formatIP(got.gateway) }) });
    }
    if (requested.size > 0) {
      releaseDone();
      throw new InternalError(`failed to allocate all requested IPs: ${[...requested.keys()].join(" ")}`);
    }
    result.ips = ips;
  } finally {
    store.close();
  }
  if (routes.length > 0) result.routes = routes;
  return result;
}

function check(args: CmdArgs): void {
  const conf = loadIPAMConfig(args.config, args.args);
  const store = DiskStore.open(conf.name, conf.dataDir);
  let found: boolean;
  try {
    store.lock();
    try {
      found = store.findByID(args.containerID, args.ifName);
    } finally {
      store.unlock();
    }
  } finally {
    store.close();
  }
  if (!found) throw new InternalError(`host-local: Failed to find address added by container ${args.containerID}`);
}

function del(args: CmdArgs): void {
  const conf = loadIPAMConfig(args.config, args.args);
  const store = DiskStore.open(conf.name, conf.dataDir);
  const errors: string[] = [];
  try {
    // One release per range set, as upstream (each releases store-wide; later passes also sweep
    // legacy container-ID-only files).
    for (const [idx, set] of conf.rangeSets.entries()) {
      try {
        new IPAllocator(set, store, idx).release(args.containerID, args.ifName);
      } catch (err) {
        // Each pass is store-wide: a file that cannot be removed fails every pass alike.
        if (!errors.includes(messageOf(err))) errors.push(messageOf(err));
      }
    }
  } finally {
    store.close();
  }
  if (errors.length > 0) throw new InternalError(errors.join(";"));
}

function status(args: CmdArgs): void {
  const conf = loadIPAMConfig(args.config, args.args);
  const store = DiskStore.openExisting(conf.name, conf.dataDir);
  if (store === null) return; // nothing reserved yet
  try {
    store.lock();
    try {
      const reservations = store.reservations();
      for (const set of conf.rangeSets) {
        if (!hasFreeAddress(set, reservations)) {
          throw new PluginUnavailableError(`no IP addresses available in range set: ${formatRangeSet(set)}`);
        }
      }
    } finally {
      store.unlock();
    }
  } finally {
    store.close();
  }
}

function gc(args: CmdArgs): void {
  const conf = loadIPAMConfig(args.config, args.args);
  const valid = parseValidAttachments(args.config);
  if (valid === undefined) return;
  const store = DiskStore.openExisting(conf.name, conf.dataDir);
  if (store === null) return;
  try {
    store.lock();
    try {
      collectGarbage(store, valid);
    } finally {
      store.unlock();
    }
  } finally {
    store.close();
  }
}

export const hostLocalPlugin: PluginSpec = {
  name: "host-local",
  versions: ALL_VERSIONS,
  add,
  check,
  del,
  status,
  gc,
};
