/**
 * cluster-local: host-local's IPAM for networks that span nodes. Same configuration and semantics
 * as host-local (ranges and range sets, `rangeStart`/`rangeEnd`, `exclude`, /31 and /32, `gateway`,
 * `routes`, `resolvConf`, requested addresses, one address per range set), but the reservations
 * live in an etcd cluster (`ipam.etcd`, config.ts) instead of a node's disk, so nodes sharing one
 * L2 network (macvlan, ipvlan, vlan, host-device, a stretched bridge) never hand out the same
 * address. Upstream has no such plugin; it is an addition of this suite (DIFFERENCES.md,
 * docs/plugins/cluster-local.md).
 *
 * - ADD: one etcd transaction per attempt takes one address per range set only if they are free
 *   (allocate.ts). An attachment that holds addresses already gets them back (a runtime's retry
 *   does not leak). When a write timed out (its outcome unknown) and the call fails, whatever it may
 *   have written for this attachment is released before the error is returned.
 * - DEL: releases exactly what the container and interface hold (release.ts); nothing held is
 *   success.
 * - CHECK: the attachment holds one address per range set, and each is still its reservation.
 * - GC: releases this node's (`etcd.node`) reservations of attachments not in
 *   `cni.dev/valid-attachments`; other nodes' are never touched.
 * - STATUS: 50 when etcd cannot be reached with a quorum within `etcd.timeout`, or a range set has no
 *   free address left.
 *
 * etcd faults (no quorum, an unreachable member, a timeout, a member dying mid-transaction) are
 * code 11 naming each endpoint and its cause; a wrong TLS setup is code 7 naming the field.
 */
import { CniError, InternalError, messageOf, PluginUnavailableError, TryAgainLaterError } from "../../shared/cni/errors.ts";
import { validAttachmentsOf } from "../../shared/cni/netconf.ts";
import type { CmdArgs, PluginSpec, Result } from "../../shared/cni/types.ts";
import { ALL_VERSIONS } from "../../shared/cni/version.ts";
import { parseIP, type IPAddr } from "../../shared/ip/addr.ts";
import { allocatableInSet, hasFreeAddress, reportRangeUsage } from "../../shared/ipam/free.ts";
import { phaseEnd, phaseStart, recordingCall } from "../../shared/telemetry/invocation.ts";
import { formatRangeSet } from "../../shared/ipam/range-set.ts";
import { planRequests, resultFrame, unmatchedError, withAddresses } from "../../shared/ipam/result.ts";
import { allocate, heldAddresses } from "./allocate.ts";
import { loadClusterLocalConfig, type ClusterLocalConfig } from "./config.ts";
import { EtcdClient } from "./etcd/client.ts";
import { NetworkKeys } from "./keys.ts";
import { collectStale, releaseAttachment } from "./release.ts";

function keysOf(conf: ClusterLocalConfig): NetworkKeys {
  return new NetworkKeys(conf.etcd.prefix, conf.name);
}

/** Adds what an ADD failure left behind (or could not clean up) to its message, keeping its code. */
function withCleanup(err: unknown, note: string): CniError {
  const msg = `${messageOf(err)}; ${note}`;
  return err instanceof CniError ? new CniError(err.code, msg, { cause: err, details: err.details }) : new InternalError(msg, { cause: err });
}

/** Every reserved address of the network (any node). */
async function allReserved(client: EtcdClient, conf: ClusterLocalConfig): Promise<IPAddr[]> {
  const under = NetworkKeys.under(keysOf(conf).ipsPrefix);
  const keysOnly = await client.range({ ...under, keysOnly: true });
  return keysOnly.kvs.flatMap((kv) => {
    const ip = parseIP(kv.key.slice(under.key.length));
    return ip === null ? [] : [ip];
  });
}

/**
 * Runs `work`, a call's work on the cluster's store, as its "ipam" phase; then, when the call
 * records telemetry, reports how many addresses of each range the cluster has used and free (one
 * more keys-only read: docs/observability.md, cni_ipam_addresses). The figures never fail the call.
 */
async function storeWork<T>(conf: ClusterLocalConfig, client: EtcdClient, work: () => Promise<T>): Promise<T> {
  const phase = phaseStart();
  try {
    const out = await work();
    if (recordingCall()) {
      try {
        reportRangeUsage("cluster-local", conf.name, conf.rangeSets, await allReserved(client, conf));
      } catch {
        // Telemetry only.
      }
    }
    return out;
  } finally {
    phaseEnd("ipam", phase);
  }
}

async function add(args: CmdArgs): Promise<Result> {
  const conf = loadClusterLocalConfig(args);
  const frame = resultFrame(conf);
  const plan = planRequests(conf);
  if (plan.unmatched.length > 0) throw unmatchedError(plan.unmatched);
  const client = new EtcdClient(conf.etcd);
  return storeWork(conf, client, () => addWith(args, conf, frame, plan.wants, client));
}

async function addWith(args: CmdArgs, conf: ClusterLocalConfig, frame: Result, wants: ReturnType<typeof planRequests>["wants"], client: EtcdClient): Promise<Result> {
  const keys = keysOf(conf);
  const owner = { containerID: args.containerID, ifname: args.ifName, node: conf.etcd.node };
  try {
    return withAddresses(frame, await allocate(client, { keys, rangeSets: conf.rangeSets, wants, owner }));
  } catch (err) {
    if (!client.writeMayHaveApplied()) throw err;
    // A write of this call may have been applied although it failed: release what this
    // attachment holds now (before this call it held nothing, or allocate would have returned it).
    try {
      await releaseAttachment(new EtcdClient(conf.etcd), keys, owner.containerID, owner.ifname);
    } catch (cleanup) {
      throw withCleanup(err, `a reservation for ${owner.containerID}/${owner.ifname} may remain (releasing it failed: ${messageOf(cleanup)}); DEL releases it`);
    }
    throw err;
  }
}

async function del(args: CmdArgs): Promise<void> {
  const conf = loadClusterLocalConfig(args, { forDel: true });
  const client = new EtcdClient(conf.etcd);
  await storeWork(conf, client, () => releaseAttachment(client, keysOf(conf), args.containerID, args.ifName));
}

async function check(args: CmdArgs): Promise<void> {
  const conf = loadClusterLocalConfig(args);
  const keys = keysOf(conf);
  const client = new EtcdClient(conf.etcd);
  const kv = (await client.range({ key: keys.owner(args.containerID, args.ifName) })).kvs[0];
  if (kv === undefined) throw new InternalError(`cluster-local: Failed to find address added by container ${args.containerID}`);
  const owner = { containerID: args.containerID, ifname: args.ifName, node: conf.etcd.node };
  await heldAddresses(client, { keys, rangeSets: conf.rangeSets, wants: [], owner }, kv);
}

async function gc(args: CmdArgs): Promise<void> {
  const conf = loadClusterLocalConfig(args);
  const valid = validAttachmentsOf(args.config);
  if (valid === undefined) return;
  const client = new EtcdClient(conf.etcd);
  await storeWork(conf, client, () => collectStale(client, keysOf(conf), conf.etcd.node, valid));
}

/** Every reserved address of the network (any node): counted first, listed only when it could matter. */
async function reservedAddresses(client: EtcdClient, conf: ClusterLocalConfig): Promise<IPAddr[] | undefined> {
  const under = NetworkKeys.under(keysOf(conf).ipsPrefix);
  const { count } = await client.range({ ...under, countOnly: true });
  if (conf.rangeSets.every((set) => BigInt(count) < allocatableInSet(set))) return undefined;
  return allReserved(client, conf);
}

async function status(args: CmdArgs): Promise<void> {
  const conf = loadClusterLocalConfig(args);
  let reserved: IPAddr[] | undefined;
  try {
    reserved = await reservedAddresses(new EtcdClient(conf.etcd), conf);
  } catch (err) {
    if (err instanceof TryAgainLaterError) throw new PluginUnavailableError(err.message, { cause: err });
    throw err;
  }
  if (reserved === undefined) return;
  for (const set of conf.rangeSets) {
    if (!hasFreeAddress(set, reserved)) throw new PluginUnavailableError(`no IP addresses available in range set: ${formatRangeSet(set)}`);
  }
}

export const clusterLocalPlugin: PluginSpec = { name: "cluster-local", versions: ALL_VERSIONS, add, check, del, status, gc };
