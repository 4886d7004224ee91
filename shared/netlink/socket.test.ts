import { describe, expect, test } from "bun:test";
import { NlWriter, buildMessage, parseMessages, readU16, readU32, setSeqPid } from "./codec.ts";
import {
  NLM_F_ACK,
  NLM_F_ACK_TLVS,
  NLM_F_CAPPED,
  NLM_F_DUMP,
  NLM_F_DUMP_INTR,
  NLM_F_MULTI,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSGERR_ATTR_MSG,
  NLMSGERR_ATTR_OFFS,
} from "./constants/netlink.ts";
import { RTM_GETLINK, RTM_NEWLINK } from "./constants/rtnetlink.ts";
import { LinkNotFoundError, NetlinkDumpInterruptedError, NetlinkError, isExists, isNotFound } from "./errors.ts";
import { DUMP_RETRIES, NetlinkSocket, decodeErrorPayload, type NetlinkTransport } from "./socket.ts";
import { EINTR, SyscallError } from "../sys/errno.ts";
import { fakeKernel } from "./testing.ts";

/** struct nlmsgerr { int error; struct nlmsghdr msg; [payload]; } + optional TLVs. */
function errorPayload(errno: number, opts: { requestPayload?: number; msg?: string }): Uint8Array {
  const w = new NlWriter();
  const payloadLen = opts.requestPayload ?? 0;
  w.i32(-errno);
  w.u32(16 + payloadLen).u16(RTM_NEWLINK).u16(0x605).u32(1).u32(0); // the echoed request header
  for (let i = 0; i < payloadLen; i++) w.u8(0xee);
  if (opts.msg !== undefined) {
    w.attrU32(NLMSGERR_ATTR_OFFS, 32);
    w.attrString(NLMSGERR_ATTR_MSG, opts.msg);
  }
  return w.toBytes();
}

describe("NLMSG_ERROR decoding", () => {
  test("an ACK is errno 0", () => {
    expect(decodeErrorPayload(errorPayload(0, {}), 0)).toEqual({ errno: 0 });
  });

  test("capped error with extended ACK text", () => {
    const p = errorPayload(95, { msg: "Unknown device type" });
    expect(decodeErrorPayload(p, NLM_F_CAPPED | NLM_F_ACK_TLVS)).toEqual({ errno: 95, extMsg: "Unknown device type" });
  });

  test("uncapped error: TLVs start after the echoed request payload", () => {
    const p = errorPayload(17, { requestPayload: 20, msg: "exists" });
    expect(decodeErrorPayload(p, NLM_F_ACK_TLVS)).toEqual({ errno: 17, extMsg: "exists" });
  });

  test("no NLM_F_ACK_TLVS flag means no text is looked for", () => {
    const p = errorPayload(17, { msg: "ignored" });
    expect(decodeErrorPayload(p, NLM_F_CAPPED)).toEqual({ errno: 17 });
  });
});

describe("netlink error types", () => {
  test("NetlinkError is a SyscallError named by the request type, with the kernel text appended", () => {
    const e = new NetlinkError(RTM_NEWLINK, 95, 'name="d0"', "Unknown device type");
    expect(e).toBeInstanceOf(SyscallError);
    expect(e.syscall).toBe("RTM_NEWLINK");
    expect(e.code).toBe("EOPNOTSUPP");
    expect(e.extMsg).toBe("Unknown device type");
    expect(e.message).toBe('RTM_NEWLINK name="d0": operation not supported (EOPNOTSUPP): Unknown device type');
    expect(new NetlinkError(RTM_NEWLINK, 17).extMsg).toBeUndefined();
  });

  test("LinkNotFoundError prints upstream's text and is not-found", () => {
    const e = new LinkNotFoundError({ name: "eth9" });
    expect(e.message).toBe("Link not found");
    expect(e.code).toBe("ENODEV");
    expect(e.lookup).toEqual({ name: "eth9" });
    expect(isNotFound(e)).toBe(true);
    expect(isExists(e)).toBe(false);
  });

  test("isNotFound / isExists go by errno, never by message", () => {
    expect(isExists(new NetlinkError(RTM_NEWLINK, 17))).toBe(true);
    for (const errno of [19, 3, 99, 2]) expect(isNotFound(new NetlinkError(RTM_NEWLINK, errno))).toBe(true);
    expect(isNotFound(new NetlinkError(RTM_NEWLINK, 22))).toBe(false);
    expect(isNotFound(new Error("Link not found"))).toBe(false);
    expect(isExists(new Error("file exists"))).toBe(false);
  });
});

// ---- reply handling, driven by a fake kernel (no root needed) --------------------------------

const PORT = 4242;

interface Req {
  type: number;
  flags: number;
  seq: number;
  pid: number;
}

/** A transport whose replies come from `answer(request)` as a list of datagrams. */
class FakeKernel implements NetlinkTransport {
  readonly portId = PORT;
  readonly fd = -1;
  readonly sent: Req[] = [];
  #queue: Uint8Array[] = [];
  closed = false;
  readonly #answer: (req: Req, n: number) => Uint8Array[];
  constructor(answer: (req: Req, n: number) => Uint8Array[]) {
    this.#answer = answer;
  }
  send(msg: Uint8Array): void {
    const [m] = parseMessages(msg);
    const req = { type: m!.type, flags: m!.flags, seq: m!.seq, pid: m!.pid };
    this.sent.push(req);
    this.#queue.push(...this.#answer(req, this.sent.length));
  }
  receive(): Uint8Array {
    const d = this.#queue.shift();
    if (d === undefined) throw new Error("fake kernel: nothing to receive (the socket would block forever)");
    return d;
  }
  close(): void {
    this.closed = true;
  }
}

function msg(type: number, flags: number, seq: number, payload: number[] = [], pid = PORT): Uint8Array {
  const m = buildMessage(type, flags, (w) => {
    for (const b of payload) w.u8(b);
  });
  setSeqPid(m, seq, pid);
  return m;
}
const cat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));
const done = (seq: number, flags = NLM_F_MULTI) => msg(NLMSG_DONE, flags, seq, [0, 0, 0, 0]);
const ack = (seq: number, errno = 0) => {
  const b = new Uint8Array(4 + 16);
  new DataView(b.buffer).setInt32(0, -errno, true);
  return msg(NLMSG_ERROR, 0x100 /* capped */, seq, [...b]);
};
const dumpReq = () => buildMessage(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, (w) => w.u32(0).u32(0).u32(0).u32(0));

describe("NetlinkSocket reply handling", () => {
  test("a dump spanning several datagrams is collected until NLMSG_DONE", () => {
    const k = new FakeKernel((r) => [
      cat(msg(RTM_NEWLINK, NLM_F_MULTI, r.seq, [1]), msg(RTM_NEWLINK, NLM_F_MULTI, r.seq, [2])),
      msg(RTM_NEWLINK, NLM_F_MULTI, r.seq, [3]),
      done(r.seq),
    ]);
    const s = NetlinkSocket.overTransport(k);
    const out = s.request(dumpReq());
    expect(out.map((m) => m.payload[0])).toEqual([1, 2, 3]);
    expect(k.sent).toHaveLength(1);
    expect(k.sent[0]!.pid).toBe(PORT);
    expect(k.sent[0]!.flags).toBe(NLM_F_REQUEST | NLM_F_DUMP);
  });

  test("sequence numbers advance per request and stale or foreign replies are skipped", () => {
    const k = new FakeKernel((r) => [
      cat(msg(RTM_NEWLINK, NLM_F_MULTI, r.seq - 1, [9]), msg(RTM_NEWLINK, NLM_F_MULTI, r.seq, [8], 777)),
      msg(RTM_NEWLINK, NLM_F_MULTI, r.seq, [1]),
      done(r.seq),
    ]);
    const s = NetlinkSocket.overTransport(k);
    expect(s.request(dumpReq()).map((m) => m.payload[0])).toEqual([1]);
    s.request(dumpReq());
    expect(k.sent[1]!.seq).toBe((k.sent[0]!.seq + 1) >>> 0);
  });

  test("NLM_F_DUMP_INTR restarts the whole dump and keeps only the clean attempt", () => {
    const k = new FakeKernel((r, n) =>
      n === 1
        ? [msg(RTM_NEWLINK, NLM_F_MULTI | NLM_F_DUMP_INTR, r.seq, [1]), done(r.seq, NLM_F_MULTI | NLM_F_DUMP_INTR)]
        : [msg(RTM_NEWLINK, NLM_F_MULTI, r.seq, [2]), done(r.seq)],
    );
    const out = NetlinkSocket.overTransport(k).request(dumpReq());
    expect(out.map((m) => m.payload[0])).toEqual([2]);
    expect(k.sent).toHaveLength(2);
  });

  test("a dump interrupted every time fails after DUMP_RETRIES attempts with EINTR", () => {
    const k = new FakeKernel((r) => [done(r.seq, NLM_F_MULTI | NLM_F_DUMP_INTR)]);
    let err: unknown;
    try {
      NetlinkSocket.overTransport(k).request(dumpReq());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NetlinkDumpInterruptedError);
    expect((err as NetlinkDumpInterruptedError).errno).toBe(EINTR);
    expect(k.sent).toHaveLength(DUMP_RETRIES);
  });

  test("an error in NLMSG_DONE fails the dump", () => {
    const k = new FakeKernel((r) => [msg(NLMSG_DONE, NLM_F_MULTI, r.seq, [0xea, 0xff, 0xff, 0xff])]); // -22
    expect(() => NetlinkSocket.overTransport(k).request(dumpReq(), "dump")).toThrow("RTM_GETLINK dump: invalid argument (EINVAL)");
  });

  test("an ACKed request returns after the ACK; an error ACK throws NetlinkError with the detail", () => {
    const req = buildMessage(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, (w) => w.u32(0).u32(0).u32(0).u32(0));
    const ok = new FakeKernel((r) => [ack(r.seq)]);
    expect(NetlinkSocket.overTransport(ok).request(req)).toEqual([]);
    const bad = new FakeKernel((r) => [ack(r.seq, 17)]);
    let err: unknown;
    try {
      NetlinkSocket.overTransport(bad).request(req, 'name="x"');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as NetlinkError).message).toBe('RTM_NEWLINK name="x": file exists (EEXIST)');
  });

  test("a plain GET returns its single reply without waiting for more", () => {
    const req = buildMessage(RTM_GETLINK, NLM_F_REQUEST, (w) => w.u32(0).u32(0).u32(0).u32(0));
    const k = new FakeKernel((r) => [msg(RTM_NEWLINK, 0, r.seq, [5])]);
    const out = NetlinkSocket.overTransport(k).request(req);
    expect(out.map((m) => [m.type, m.payload[0]])).toEqual([[RTM_NEWLINK, 5]]);
  });

  test("payloads are copied out of the receive buffer", () => {
    const shared = new Uint8Array(64);
    let step = 0;
    const k: NetlinkTransport = {
      portId: PORT,
      fd: -1,
      send: () => undefined,
      receive: () => {
        const seq = s.lastSeq;
        const d = step++ === 0 ? msg(RTM_NEWLINK, NLM_F_MULTI, seq, [7]) : done(seq);
        shared.fill(0);
        shared.set(d);
        return shared.subarray(0, d.byteLength);
      },
      close: () => undefined,
    };
    const s = { lastSeq: 0 };
    const sock = NetlinkSocket.overTransport({
      ...k,
      send: (m: Uint8Array) => {
        s.lastSeq = readU32(m, 8);
        expect(readU16(m, 4)).toBe(RTM_GETLINK);
      },
    });
    const out = sock.request(dumpReq());
    expect(out[0]!.payload[0]).toBe(7);
  });

  test("close is delegated to the transport", () => {
    const k = new FakeKernel(() => []);
    NetlinkSocket.overTransport(k).close();
    expect(k.closed).toBe(true);
  });
});

describe("NetlinkSocket.requestBatch", () => {
  const begin = () => buildMessage(0x10, NLM_F_REQUEST, (w) => w.u32(0));
  const op = () => buildMessage(0x0a08, NLM_F_REQUEST | NLM_F_ACK, (w) => w.u32(0));

  test("one datagram with consecutive sequence numbers; answers in order, across datagrams, foreign and stale replies skipped", () => {
    const k = fakeKernel(PORT, (m) => [cat(ack(m[1]!.seq), ack(9999, 1)), cat(ack(m[2]!.seq, 2), ack(m[1]!.seq + 100, 5))]);
    const answers = NetlinkSocket.overTransport(k).requestBatch([begin(), op(), op(), begin()], 0x0a08);
    expect(k.sent.length).toBe(1);
    expect(k.sent[0]!.map((m) => m.seq - k.sent[0]![0]!.seq)).toEqual([0, 1, 2, 3]);
    expect(answers).toEqual([undefined, { errno: 0 }, { errno: 2 }, undefined]);
  });

  test("an error answering a message sent without NLM_F_ACK refuses the whole batch", () => {
    const k = fakeKernel(PORT, (m) => [ack(m[0]!.seq, 1)]);
    expect(() => NetlinkSocket.overTransport(k).requestBatch([begin(), op(), begin()], 0x0a08, "inet t")).toThrow("NFT_MSG_DELRULE inet t (batch refused): operation not permitted (EPERM)");
  });
});
