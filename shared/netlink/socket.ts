/**
 * A synchronous NETLINK_ROUTE socket: one request at a time, replies matched by sequence number
 * and port id, multipart dumps read until NLMSG_DONE (and retried when the kernel flags them
 * NLM_F_DUMP_INTR), and NLMSG_ERROR decoded into {@link NetlinkError} with the extended-ACK
 * message when the kernel sends one.
 *
 * The socket acts on the netns it was created in, whatever the calling thread's netns is later.
 * Created inside a namespace only through `Handle.open(ns)`.
 */

import { AF_NETLINK, MSG_PEEK, MSG_TRUNC, SOCK_CLOEXEC, SOCK_RAW } from "../sys/constants.ts";
import { ENOBUFS, ENOPROTOOPT } from "../sys/errno.ts";
import { SyscallError } from "../sys/errors.ts";
import { OwnedFd } from "../sys/fd.ts";
import { bind, close, getsockname, recvfrom, sendto, setsockoptInt, socket } from "../sys/libc.ts";
import { HOST_LITTLE_ENDIAN, parseAttrs, parseMessages, readI32, readString, readU16, readU32, setSeqPid, type NlMessage } from "./codec.ts";
import {
  NETLINK_CAP_ACK,
  NETLINK_EXT_ACK,
  NETLINK_ROUTE,
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
  SOL_NETLINK,
} from "./constants/netlink.ts";
import { NETLINK_NETFILTER } from "./constants/nfnetlink.ts";
import { NetlinkDumpInterruptedError, NetlinkError } from "./errors.ts";
import { deferRelease, releaseDeferrable } from "./netfilter-release.ts";

/** How many times a dump flagged NLM_F_DUMP_INTR is restarted before giving up. */
export const DUMP_RETRIES = 10;

/**
 * The receive buffer, one for the whole process and shared by every socket: a plugin call opens
 * several sockets (one per namespace and protocol), and each fresh 64 KiB typed array costs page
 * faults that a profile of a bridge ADD showed at several milliseconds. Sharing is safe because
 * receiving is synchronous and every reader decodes or copies a datagram before the next receive
 * on any socket. Grown on demand when a datagram is larger (sized with MSG_PEEK|MSG_TRUNC).
 */
const RECV_BUFFER_SIZE = 64 * 1024;
let recvBuffer: Uint8Array | undefined;

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

/** sockaddr_nl { nl_family = AF_NETLINK, nl_pad, nl_pid = 0 (kernel assigns), nl_groups = 0 }. */
function sockaddrNl(): Uint8Array {
  const b = new Uint8Array(12);
  new DataView(b.buffer).setUint16(0, AF_NETLINK, HOST_LITTLE_ENDIAN);
  return b;
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

/**
 * A bound AF_NETLINK socket (SOCK_CLOEXEC) with extended ACKs enabled. A NETLINK_NETFILTER one
 * may have its close deferred (netfilter-release.ts).
 */
class KernelTransport implements NetlinkTransport {
  readonly #file: OwnedFd;
  readonly #deferClose: boolean;
  readonly portId: number;

  constructor(protocol: number) {
    const file = new OwnedFd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol));
    try {
      for (const opt of [NETLINK_EXT_ACK, NETLINK_CAP_ACK]) {
        try {
          setsockoptInt(file.fd, SOL_NETLINK, opt, 1);
        } catch (err) {
          // Older kernels lack these options; errors are still decoded, only without the text.
          if (!(err instanceof SyscallError && err.errno === ENOPROTOOPT)) throw err;
        }
      }
      bind(file.fd, sockaddrNl());
      const addr = new Uint8Array(12);
      getsockname(file.fd, addr);
      this.portId = readU32(addr, 4);
    } catch (err) {
      file.close();
      throw err;
    }
    this.#file = file;
    this.#deferClose = protocol === NETLINK_NETFILTER && releaseDeferrable();
  }

  get fd(): number {
    return this.#file.fd;
  }

  send(msg: Uint8Array): void {
    sendto(this.#file.fd, msg, 0, sockaddrNl());
  }

  /** Receives one whole datagram (valid until the next receive on any socket), growing the shared buffer when the kernel's is larger. */
  receive(): Uint8Array {
    const fd = this.#file.fd;
    let buf = (recvBuffer ??= new Uint8Array(RECV_BUFFER_SIZE));
    const size = recvfrom(fd, buf, MSG_PEEK | MSG_TRUNC);
    if (size > buf.byteLength) buf = recvBuffer = new Uint8Array(size + 4096);
    const n = recvfrom(fd, buf, 0);
    return buf.subarray(0, n);
  }

  close(): void {
    if (this.#deferClose && this.#file.isOpen) {
      const fd = this.#file.release();
      if (!deferRelease(fd)) close(fd);
      return;
    }
    this.#file.close();
  }
}

export class NetlinkSocket {
  readonly #io: NetlinkTransport;
  #seq: number;

  private constructor(io: NetlinkTransport) {
    this.#io = io;
    this.#seq = (Date.now() / 1000) >>> 0;
  }

  /** Opens and binds a NETLINK_ROUTE socket in the calling thread's netns. */
  static open(protocol = NETLINK_ROUTE): NetlinkSocket {
    return new NetlinkSocket(new KernelTransport(protocol));
  }

  /** A socket over another transport (unit tests drive the reply logic with a fake kernel). */
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
    const flags = readU16(msg, 6);
    if ((flags & NLM_F_DUMP) !== NLM_F_DUMP) return this.#exchange(msg, detail).messages;
    for (let attempt = 1; attempt <= DUMP_RETRIES; attempt++) {
      const r = this.#exchange(msg, detail);
      if (!r.interrupted) return r.messages;
    }
    throw new NetlinkDumpInterruptedError(readU16(msg, 4), DUMP_RETRIES);
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
