/**
 * A synchronous NETLINK_ROUTE socket: one request at a time, replies matched by sequence number
 * and port id, multipart dumps read until NLMSG_DONE (and retried when the kernel flags them
 * NLM_F_DUMP_INTR), and NLMSG_ERROR decoded into {@link NetlinkError} with the extended-ACK
 * message when the kernel sends one.
 *
 * The socket acts on the netns it was created in, whatever the calling thread's netns is later.
 * Created inside a namespace only through `Handle.open(ns)`. The kernel side (the descriptor) is
 * kernel-transport.ts; this is the protocol over any {@link NetlinkTransport}.
 */

import { ENOBUFS } from "../sys/errno.ts";
import { parseAttrs, parseMessages, readI32, readString, readU16, readU32, setSeqPid, type NlMessage } from "./codec.ts";
import {
  NLM_F_ACK,
  NLM_F_ACK_TLVS,
  NLM_F_CAPPED,
  NLM_F_DUMP,
  NLM_F_DUMP_INTR,
  NLM_F_MULTI,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLMSG_NOOP,
  NLMSG_OVERRUN,
  NLMSGERR_ATTR_MSG,
} from "./constants/netlink.ts";
import { NetlinkDumpInterruptedError, NetlinkError } from "./errors.ts";
import { phaseEnd, phaseStart } from "../telemetry/invocation.ts";
import type { Phase } from "../telemetry/invocation.ts";

/**
 * The phase of a call (shared/telemetry) a request of message type `type` is part of: rtnetlink's
 * links, addresses, routes (with neighbours and rules) and traffic control; nfnetlink's types
 * (subsystem << 8, nf_tables and conntrack) are the firewall.
 */
function phaseOf(type: number): Phase {
  if (type >= 0x100) return "firewall";
  if (type < 20) return "link"; // RTM_NEWLINK..RTM_GETLINK (16-19)
  if (type < 24) return "address"; // RTM_*ADDR (20-23)
  if (type < 36) return "route"; // RTM_*ROUTE, RTM_*NEIGH, RTM_*RULE (24-35)
  return "tc"; // RTM_*QDISC, RTM_*TCLASS, RTM_*TFILTER (36-47) and later families
}

/** How many times a dump flagged NLM_F_DUMP_INTR is restarted before giving up. */
export const DUMP_RETRIES = 10;


/** What the kernel said in an NLMSG_ERROR/NLMSG_DONE error payload. */
export interface DecodedError {
  /** Positive errno; 0 for an ACK. */
  errno: number;
  extMsg?: string;
}

/**
 * Decodes `struct nlmsgerr` (+ extended-ACK TLVs) from an NLMSG_ERROR payload. `flags` are the
 * NLMSG_ERROR header flags (NLM_F_CAPPED / NLM_F_ACK_TLVS).
 */
export function decodeErrorPayload(payload: Uint8Array, flags: number): DecodedError {
  const errno = 0 - readI32(payload, 0);
  if (errno === 0 || (flags & NLM_F_ACK_TLVS) === 0) return { errno };
  // struct nlmsgerr { int error; struct nlmsghdr msg; } + the request's payload unless capped.
  let off = 4 + NLMSG_HDRLEN;
  if ((flags & NLM_F_CAPPED) === 0 && payload.byteLength >= 4 + NLMSG_HDRLEN) {
    off = 4 + readU32(payload, 4);
  }
  off = (off + 3) & ~3;
  if (off > payload.byteLength) return { errno };
  for (const a of parseAttrs(payload, off)) {
    if (a.type === NLMSGERR_ATTR_MSG) return { errno, extMsg: readString(a.data) };
  }
  return { errno };
}

/** Decodes the error of an NLMSG_DONE payload (an int, then TLVs when NLM_F_ACK_TLVS). */
function decodeDonePayload(payload: Uint8Array, flags: number): DecodedError {
  if (payload.byteLength < 4) return { errno: 0 };
  const errno = 0 - readI32(payload, 0);
  if (errno <= 0) return { errno: 0 };
  if ((flags & NLM_F_ACK_TLVS) !== 0) {
    for (const a of parseAttrs(payload, 4)) {
      if (a.type === NLMSGERR_ATTR_MSG) return { errno, extMsg: readString(a.data) };
    }
  }
  return { errno };
}


/** How a NetlinkSocket moves datagrams; the kernel socket in production, a fake in unit tests. */
export interface NetlinkTransport {
  /** The kernel-assigned port id (nl_pid) replies are addressed to. */
  readonly portId: number;
  /** The descriptor, or -1 for a fake. */
  readonly fd: number;
  send(msg: Uint8Array): void;
  /** One whole datagram (valid until the next receive, on this or any other socket). */
  receive(): Uint8Array;
  close(): void;
}


export class NetlinkSocket {
  readonly #io: NetlinkTransport;
  #seq: number;

  private constructor(io: NetlinkTransport) {
    this.#io = io;
    this.#seq = (Date.now() / 1000) >>> 0;
  }

  /** A socket over `io`: the kernel's (kernel-transport.ts) or, in unit tests, a fake kernel. */
  static overTransport(io: NetlinkTransport): NetlinkSocket {
    return new NetlinkSocket(io);
  }

  /** The descriptor (for diagnostics). */
  get fd(): number {
    return this.#io.fd;
  }

  /** The kernel-assigned port id (nl_pid) of this socket. */
  get portId(): number {
    return this.#io.portId;
  }

  close(): void {
    this.#io.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * Sends one request built by `buildMessage` (seq/pid are filled here) and collects the replies:
   * - a dump (NLM_F_DUMP) returns every message until NLMSG_DONE, restarting the whole dump when
   *   the kernel flags it interrupted (at most {@link DUMP_RETRIES} times);
   * - a request with NLM_F_ACK waits for the ACK and returns any messages before it;
   * - otherwise the first non-multipart reply ends the exchange.
   * A kernel error throws {@link NetlinkError} whose detail is `detail`.
   */
  request(msg: Uint8Array, detail = ""): NlMessage[] {
    const phase = phaseStart();
    try {
      const flags = readU16(msg, 6);
      if ((flags & NLM_F_DUMP) !== NLM_F_DUMP) return this.#exchange(msg, detail).messages;
      for (let attempt = 1; attempt <= DUMP_RETRIES; attempt++) {
        const r = this.#exchange(msg, detail);
        if (!r.interrupted) return r.messages;
      }
      throw new NetlinkDumpInterruptedError(readU16(msg, 4), DUMP_RETRIES);
    } finally {
      phaseEnd(phaseOf(readU16(msg, 4)), phase);
    }
  }

  /**
   * Sends `msgs` in one datagram, as an nfnetlink batch is sent (NFNL_MSG_BATCH_BEGIN, operations
   * each with NLM_F_ACK, NFNL_MSG_BATCH_END; seq/pid are filled here), and returns the answer to
   * each message sent with NLM_F_ACK, in order (`errno` 0: acknowledged), undefined for the
   * others. The kernel applies such a batch atomically: when any operation fails, none is applied,
   * and the operations that did not fail are still acknowledged with 0. An error answering a
   * message sent without NLM_F_ACK (the batch refused as a whole: no nf_tables, no permission, a
   * stale generation, a failed commit) throws {@link NetlinkError} with the type of `blame`.
   */
  requestBatch(msgs: readonly Uint8Array[], blame: number, detail = ""): (DecodedError | undefined)[] {
    const phase = phaseStart();
    try {
      return this.#batch(msgs, blame, detail);
    } finally {
      phaseEnd(phaseOf(blame), phase);
    }
  }

  #batch(msgs: readonly Uint8Array[], blame: number, detail: string): (DecodedError | undefined)[] {
    const portId = this.#io.portId;
    const seqIndex = new Map<number, number>();
    const answers: (DecodedError | undefined)[] = msgs.map(() => undefined);
    let pending = 0;
    let total = 0;
    for (const m of msgs) total += m.byteLength;
    const out = new Uint8Array(total);
    let at = 0;
    msgs.forEach((m, i) => {
      const seq = this.#nextSeq();
      out.set(m, at);
      setSeqPid(out.subarray(at), seq, portId);
      at += m.byteLength;
      seqIndex.set(seq, i);
      if ((readU16(m, 6) & NLM_F_ACK) !== 0) pending++;
    });
    this.#io.send(out);
    while (pending > 0) {
      const datagram = this.#io.receive();
      for (const m of parseMessages(datagram)) {
        const i = seqIndex.get(m.seq);
        if (i === undefined || (m.pid !== portId && m.pid !== 0) || m.type !== NLMSG_ERROR) continue;
        const e = decodeErrorPayload(m.payload, m.flags);
        if ((readU16(msgs[i]!, 6) & NLM_F_ACK) === 0) {
          if (e.errno !== 0) throw new NetlinkError(blame, e.errno, `${detail} (batch refused)`.trim(), e.extMsg);
          continue;
        }
        if (answers[i] === undefined) pending--;
        answers[i] = e;
      }
    }
    return answers;
  }

  #exchange(msg: Uint8Array, detail: string): { messages: NlMessage[]; interrupted: boolean } {
    const type = readU16(msg, 4);
    const flags = readU16(msg, 6);
    const seq = this.#nextSeq();
    const out = msg.slice();
    const portId = this.#io.portId;
    setSeqPid(out, seq, portId);
    this.#io.send(out);

    const isDump = (flags & NLM_F_DUMP) === NLM_F_DUMP;
    const wantAck = (flags & NLM_F_ACK) !== 0;
    const messages: NlMessage[] = [];
    let interrupted = false;
    for (;;) {
      const datagram = this.#io.receive();
      for (const m of parseMessages(datagram)) {
        // Replies to an earlier request (or from another sender) are not ours: skip them.
        if (m.seq !== seq || (m.pid !== portId && m.pid !== 0)) continue;
        if ((m.flags & NLM_F_DUMP_INTR) !== 0) interrupted = true;
        if (m.type === NLMSG_NOOP) continue;
        if (m.type === NLMSG_OVERRUN) throw new NetlinkError(type, ENOBUFS, `${detail} (overrun)`.trim());
        if (m.type === NLMSG_ERROR) {
          const e = decodeErrorPayload(m.payload, m.flags);
          if (e.errno !== 0) throw new NetlinkError(type, e.errno, detail, e.extMsg);
          return { messages, interrupted };
        }
        if (m.type === NLMSG_DONE) {
          const e = decodeDonePayload(m.payload, m.flags);
          if (e.errno !== 0) throw new NetlinkError(type, e.errno, detail, e.extMsg);
          if (isDump && !wantAck) return { messages, interrupted };
          continue;
        }
        // Copy out: the receive buffer is reused for the next datagram.
        messages.push({ ...m, payload: m.payload.slice() });
        if (!isDump && !wantAck && (m.flags & NLM_F_MULTI) === 0) return { messages, interrupted };
      }
    }
  }

  #nextSeq(): number {
    this.#seq = (this.#seq + 1) >>> 0;
    if (this.#seq === 0) this.#seq = 1;
    return this.#seq;
  }
}
