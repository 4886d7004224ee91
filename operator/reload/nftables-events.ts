/**
 * nf_tables' side of `cni-plugins reload --watch`: the kernel's change notifications
 * (shared/netlink/nftables-events.ts), read by a blocking read in the runtime's I/O thread pool
 * (node:fs `read` on the socket), so the watcher's thread never blocks. A deletion in a table the
 * plugins write to (each plugin names its tables in the registry: iptables-nft's `nat` and `filter`
 * for ipMasq, portmap and the firewall plugin's iptables backend, our own nftables tables, the
 * bridge table of spoof-check) is a change; `nft flush ruleset` deletes them all. Notifications the kernel had to drop (ENOBUFS: the reader
 * fell behind) count as a change too. Deletions elsewhere (kube-proxy's tables, firewalld's own)
 * are ignored.
 */
import { read } from "node:fs";
import { messageOf } from "../../shared/error/annotate.ts";
import { NftEventSocket, parseNftChanges, type NftDeletion } from "../../shared/netlink/nftables-events.ts";

/** How every change this source reports begins. */
export const NFTABLES_REASON = "nf_tables:";

/** A description of the first deletion in one of `tables` (`<family> <table>`), or undefined. */
export function relevantDeletion(changes: readonly NftDeletion[], tables: ReadonlySet<string>): string | undefined {
  const d = changes.find((c) => c.family !== undefined && tables.has(`${c.family} ${c.table}`));
  if (d === undefined) return undefined;
  const where = `${d.family} ${d.table}`;
  const what = d.kind === "table" ? `table ${where} deleted` : d.kind === "chain" ? `chain ${d.chain} of ${where} deleted` : `rule deleted from ${where} ${d.chain ?? ""}`.trimEnd();
  return `${NFTABLES_REASON} ${what}`;
}

/**
 * Starts watching (see module doc) until `signal` aborts; false when this kernel offers no
 * nf_tables notifications (nothing to watch). `stopped` resolves once the socket is closed.
 */
export function watchNftables(tables: ReadonlySet<string>, onChange: (why: string) => void, log: (line: string) => void, signal: AbortSignal): { started: boolean; stopped: Promise<void> } {
  let sock: NftEventSocket;
  try {
    sock = NftEventSocket.open();
  } catch (err) {
    log(`nf_tables notifications are not available (${messageOf(err)}): deletions are found by the periodic check only`);
    return { started: false, stopped: Promise.resolve() };
  }
  const buf = Buffer.alloc(256 * 1024);
  const stopped = new Promise<void>((resolve) => {
    const next = (): void => {
      // The socket is closed only here, never while a read on it is pending.
      if (signal.aborted) {
        sock.close();
        resolve();
        return;
      }
      read(sock.fd, buf, 0, buf.length, null, (err, n) => {
        if (err !== null) {
          if (err.code === "ENOBUFS") onChange(`${NFTABLES_REASON} notifications were dropped by the kernel`);
          else if (err.code !== "EAGAIN" && err.code !== "EINTR") {
            log(`reading nf_tables notifications: ${err.message}`);
            setTimeout(next, 1000);
            return;
          }
          next();
          return;
        }
        try {
          const why = relevantDeletion(parseNftChanges(buf.subarray(0, n)), tables);
          if (why !== undefined) onChange(why);
        } catch (e) {
          onChange(`${NFTABLES_REASON} a notification not understood (${messageOf(e)})`);
        }
        next();
      });
    };
    next();
  });
  return { started: true, stopped };
}
