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
 * subnets and `exclude` (shared/ipam/range.ts). Config errors are code 7 (upstream 999) with
 * upstream's text. The full list is DIFFERENCES.md.
 */
import { InternalError, PluginUnavailableError, messageOf } from "../../shared/cni/errors.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import type { AllocatedIP } from "../../shared/ipam/candidates.ts";
import { hasFreeAddress, reportRangeUsage } from "../../shared/ipam/free.ts";
import { formatRangeSet } from "../../shared/ipam/range-set.ts";
import { planRequests, rangeSetFailure, resultFrame, unmatchedError, withAddresses } from "../../shared/ipam/result.ts";
import { IPAllocator } from "./allocator/allocator.ts";
import { loadHostLocalConfig, type IPAMConfig } from "./config.ts";
import { collectGarbage, parseValidAttachments } from "./gc.ts";
import { DiskStore } from "./store/disk.ts";
import { phaseEnd, phaseStart, recordingCall } from "../../shared/telemetry/invocation.ts";

/**
 * Runs `fn`, a call's work on the store, as its "ipam" phase; then, when the call records
 * telemetry, reports how many addresses of each range are used and free (a second short hold of
 * the store's lock: the figures are those after the call).
 */
function storeWork<T>(conf: IPAMConfig, store: DiskStore, fn: () => T, locked = false): T {
  const phase = phaseStart();
  try {
    const out = fn();
    if (recordingCall()) reportUsage(conf, store, locked);
    return out;
  } finally {
    phaseEnd("ipam", phase);
  }
}

function reportUsage(conf: IPAMConfig, store: DiskStore, locked: boolean): void {
  try {
    if (!locked) store.lock();
    try {
      reportRangeUsage("host-local", conf.name, conf.rangeSets, store.reservations().map((r) => r.ip));
    } finally {
      if (!locked) store.unlock();
    }
  } catch {
    // The figures are telemetry: they never fail the call.
  }
}

function add(args: CmdArgs): Result {
  const conf = loadHostLocalConfig(args);
  const frame = resultFrame(conf);
  const plan = planRequests(conf);
  const store = DiskStore.open(conf.name, conf.dataDir, { lockWaiter: args.scope.lockWaiter });
  try {
    return storeWork(conf, store, () => allocate(args, conf, plan, frame, store));
  } finally {
    store.close();
  }
}

function allocate(args: CmdArgs, conf: IPAMConfig, plan: ReturnType<typeof planRequests>, frame: Result, store: DiskStore): Result {
  const done: IPAllocator[] = [];
  const allocated: AllocatedIP[] = [];
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
    try {
      allocated.push(allocator.get(args.containerID, args.ifName, plan.wants[idx]));
    } catch (err) {
      releaseDone();
      throw rangeSetFailure(idx, err);
    }
    done.push(allocator);
  }
  if (plan.unmatched.length > 0) {
    releaseDone();
    throw unmatchedError(plan.unmatched);
  }
  return withAddresses(frame, allocated);
}

function check(args: CmdArgs): void {
  const conf = loadHostLocalConfig(args);
  const store = DiskStore.open(conf.name, conf.dataDir, { lockWaiter: args.scope.lockWaiter });
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
  const conf = loadHostLocalConfig(args, { forDel: true });
  const store = DiskStore.open(conf.name, conf.dataDir, { lockWaiter: args.scope.lockWaiter });
  const errors: string[] = [];
  try {
    // One release per range set, as upstream (each releases store-wide; later passes also sweep
    // legacy container-ID-only files).
    storeWork(conf, store, () => {
      for (const [idx, set] of conf.rangeSets.entries()) {
        try {
          new IPAllocator(set, store, idx).release(args.containerID, args.ifName);
        } catch (err) {
          // Each pass is store-wide: a file that cannot be removed fails every pass alike.
          if (!errors.includes(messageOf(err))) errors.push(messageOf(err));
        }
      }
    });
  } finally {
    store.close();
  }
  if (errors.length > 0) throw new InternalError(errors.join(";"));
}

function status(args: CmdArgs): void {
  const conf = loadHostLocalConfig(args);
  const store = DiskStore.openExisting(conf.name, conf.dataDir, { lockWaiter: args.scope.lockWaiter });
  if (store === null) return; // nothing reserved yet
  try {
    store.lock();
    try {
      const reserved = store.reservations().map((r) => r.ip);
      for (const set of conf.rangeSets) {
        if (!hasFreeAddress(set, reserved)) {
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
  const conf = loadHostLocalConfig(args);
  const valid = parseValidAttachments(args.config);
  if (valid === undefined) return;
  const store = DiskStore.openExisting(conf.name, conf.dataDir, { lockWaiter: args.scope.lockWaiter });
  if (store === null) return;
  try {
    store.lock();
    try {
      storeWork(conf, store, () => collectGarbage(store, valid), true);
    } finally {
      store.unlock();
    }
  } finally {
    store.close();
  }
}

export const hostLocalPlugin: PluginSpec = { name: "host-local", versions: ALL_VERSIONS, add, check, del, status, gc };
