/**
 * Netlink error types and the typed predicates callers use instead of matching messages.
 */

import { EADDRNOTAVAIL, EEXIST, EINTR, ENODEV, ENOENT, ESRCH, SyscallError } from "../sys/errno.ts";
import { nftMsgName } from "./constants/nf-tables.ts";
import { NFNL_SUBSYS_NFTABLES } from "./constants/nfnetlink.ts";
import { rtmName } from "./constants/rtnetlink.ts";

/** The name of a request type: NFT_MSG_* for nf_tables messages (subsystem in the high byte), else RTM_*. */
function msgName(type: number): string {
  return type >> 8 === NFNL_SUBSYS_NFTABLES ? nftMsgName(type & 0xff) : rtmName(type);
}

/**
 * The kernel rejected a request (NLMSG_ERROR) or a dump failed. `syscall` is the request type
 * (`"RTM_NEWLINK"`, `"NFT_MSG_DELRULE"`), `errno` the kernel's error, `extMsg` the extended-ACK text when the kernel
 * sent one (e.g. "Unknown device type"). The message reads
 * `RTM_NEWLINK name="veth0": file exists (EEXIST)` plus `: <extMsg>` when present.
 */
export class NetlinkError extends SyscallError {
  override name = "NetlinkError";
  /** The rtnetlink message type of the failed request. */
  readonly msgType: number;
  /** Kernel extended-ACK message (NLMSGERR_ATTR_MSG), if any. */
  readonly extMsg?: string;

  constructor(msgType: number, errno: number, detail = "", extMsg?: string, options?: { cause?: unknown }) {
    super(msgName(msgType), errno, detail, {
      ...(options?.cause === undefined ? {} : { cause: options.cause }),
      ...(extMsg === undefined || extMsg === "" ? {} : { suffix: `: ${extMsg}` }),
    });
    this.msgType = msgType;
    if (extMsg !== undefined && extMsg !== "") this.extMsg = extMsg;
  }
}

/** A dump kept being interrupted (NLM_F_DUMP_INTR) after all retries. errno is EINTR. */
export class NetlinkDumpInterruptedError extends NetlinkError {
  override name = "NetlinkDumpInterruptedError";
  constructor(msgType: number, attempts: number) {
    super(msgType, EINTR, `dump interrupted ${attempts} times`);
  }
}

/**
 * No link with the requested name or index. `message` is exactly `Link not found`, as upstream's
 * netlink library prints it (plugins prefix their own context). errno is ENODEV.
 */
export class LinkNotFoundError extends NetlinkError {
  override name = "LinkNotFoundError";
  /** What was looked up. */
  readonly lookup: { name: string } | { index: number };
  constructor(lookup: { name: string } | { index: number }, options?: { cause?: unknown }) {
    super(18 /* RTM_GETLINK */, ENODEV, "name" in lookup ? `name=${JSON.stringify(lookup.name)}` : `index=${lookup.index}`, undefined, options);
    this.lookup = lookup;
    this.message = "Link not found";
  }
}

/**
 * True when the object a request names does not exist: LinkNotFoundError, or a SyscallError with
 * ENODEV (link), ESRCH (route/rule delete), EADDRNOTAVAIL (address delete) or ENOENT.
 */
export function isNotFound(err: unknown): boolean {
  if (err instanceof LinkNotFoundError) return true;
  return err instanceof SyscallError && [ENODEV, ESRCH, EADDRNOTAVAIL, ENOENT].includes(err.errno);
}

/** True when the request failed because the object already exists (EEXIST). */
export function isExists(err: unknown): boolean {
  return err instanceof SyscallError && err.errno === EEXIST;
}
