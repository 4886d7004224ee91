/**
 * Test support (imported only by *.test.ts): a {@link NetlinkTransport} standing in for the
 * kernel. Each datagram sent is recorded (every message in it) and answered with the datagrams
 * `answer` returns for it, which `receive` then hands out in order.
 */
import { parseMessages } from "./codec.ts";
import type { NetlinkTransport } from "./socket.ts";

/** One message of a sent datagram. */
export interface SentMessage {
  type: number;
  flags: number;
  seq: number;
  payload: Uint8Array;
}

export interface FakeKernel extends NetlinkTransport {
  /** Every datagram sent, as its messages. */
  readonly sent: SentMessage[][];
}

export function fakeKernel(portId: number, answer: (msgs: SentMessage[]) => Uint8Array[]): FakeKernel {
  const queue: Uint8Array[] = [];
  const sent: SentMessage[][] = [];
  return {
    portId,
    fd: -1,
    sent,
    send(datagram) {
      const msgs = parseMessages(datagram).map((m) => ({ type: m.type, flags: m.flags, seq: m.seq, payload: m.payload.slice() }));
      sent.push(msgs);
      queue.push(...answer(msgs));
    },
    receive() {
      const d = queue.shift();
      if (d === undefined) throw new Error("fake kernel: nothing to receive (the socket would block forever)");
      return d;
    },
    close() {},
  };
}
