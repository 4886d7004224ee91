/** agent/protocol.ts: framing, request assembly, bounds, the environment. */
import { describe, expect, test } from "bun:test";
import {
  encodeChunks,
  encodeExit,
  encodeFrame,
  envFrom,
  Frame,
  FrameDecoder,
  MAX_PAYLOAD,
  ProtocolError,
  RequestAssembler,
  REQUEST_LIMITS,
  u32,
} from "./protocol.ts";
import { requestFrames } from "../test/harness/agent-client.ts";

function concat(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

describe("FrameDecoder", () => {
  test("frames split at every byte boundary come out whole and in order", () => {
    const stream = concat([encodeFrame(Frame.ARG, "bridge"), encodeFrame(Frame.END), encodeFrame(Frame.STDIN, new Uint8Array(1000).fill(7))]);
    for (const step of [1, 2, 5, 999, stream.length]) {
      const d = new FrameDecoder();
      const got = [];
      for (let i = 0; i < stream.length; i += step) got.push(...d.push(stream.subarray(i, i + step)));
      expect(got.map((f) => [f.type, f.payload.length])).toEqual([
        [Frame.ARG, 6],
        [Frame.END, 0],
        [Frame.STDIN, 1000],
      ]);
      expect(d.pending).toBe(0);
    }
  });

  test("an oversized frame is refused from its header, before its payload is buffered", () => {
    const header = new Uint8Array(5);
    new DataView(header.buffer).setUint32(0, MAX_PAYLOAD + 1, true);
    header[4] = Frame.STDIN;
    expect(() => new FrameDecoder().push(header)).toThrow(ProtocolError);
    const atLimit = new Uint8Array(5);
    new DataView(atLimit.buffer).setUint32(0, MAX_PAYLOAD, true);
    expect(new FrameDecoder().push(atLimit)).toEqual([]); // waits for the payload
  });

  test("encodeFrame refuses to build an oversized frame; output is chunked; EXIT carries the status", () => {
    expect(() => encodeFrame(Frame.STDOUT, new Uint8Array(MAX_PAYLOAD + 1))).toThrow(RangeError);
    const chunks = encodeChunks(Frame.STDOUT, new Uint8Array(150 * 1024));
    expect(chunks.map((c) => u32(c))).toEqual([65536, 65536, 22528]);
    expect(encodeChunks(Frame.STDERR, new Uint8Array(0))).toEqual([]);
    const exit = new FrameDecoder().push(encodeExit(7))[0]!;
    expect([exit.type, u32(exit.payload)]).toEqual([Frame.EXIT, 7]);
  });
});

describe("RequestAssembler", () => {
  const call = { buildId: "b1", argv: ["/opt/cni/bin/bridge", "x"], env: { CNI_COMMAND: "ADD", PATH: "/bin" }, pid: 42, umask: 0o027 };

  test("HELLO, ARGs, ENVs, END make the request", () => {
    const a = new RequestAssembler();
    const frames = new FrameDecoder().push(concat(requestFrames(call)));
    const out = frames.map((f) => a.add(f));
    expect(out.slice(0, -1).every((r) => r === undefined)).toBe(true);
    expect(out.at(-1)).toEqual({ protocol: 1, pid: 42, umask: 0o027, buildId: "b1", argv: call.argv, envEntries: ["CNI_COMMAND=ADD", "PATH=/bin"] });
  });

  test("out of order or malformed requests are protocol errors", () => {
    const frames = new FrameDecoder().push(concat(requestFrames(call)));
    const [hello, arg0, , env0] = frames;
    expect(() => new RequestAssembler().add(arg0!)).toThrow("expected HELLO");
    expect(() => new RequestAssembler().add({ type: Frame.HELLO, payload: new Uint8Array(3) })).toThrow("malformed HELLO");
    const a = new RequestAssembler();
    a.add(hello!);
    a.add(env0!);
    expect(() => a.add(arg0!)).toThrow("ARG after ENV");
    const b = new RequestAssembler();
    b.add(hello!);
    expect(() => b.add({ type: Frame.END, payload: new Uint8Array(0) })).toThrow("without argv[0]");
    expect(() => b.add({ type: Frame.STDIN, payload: new Uint8Array(1) })).toThrow("unexpected frame");
  });

  test("the totals are bounded: bytes, arguments, environment entries", () => {
    const hello = new FrameDecoder().push(concat(requestFrames(call)))[0]!;
    const big = { type: Frame.ENV, payload: new Uint8Array(MAX_PAYLOAD).fill(0x41) };
    const a = new RequestAssembler();
    a.add(hello);
    expect(() => {
      for (let i = 0; i < REQUEST_LIMITS.maxBytes / MAX_PAYLOAD + 1; i++) a.add(big);
    }).toThrow(`request exceeds ${REQUEST_LIMITS.maxBytes} bytes`);
    const b = new RequestAssembler();
    b.add(hello);
    expect(() => {
      for (let i = 0; i <= REQUEST_LIMITS.maxArgs; i++) b.add({ type: Frame.ARG, payload: new Uint8Array(1) });
    }).toThrow(`more than ${REQUEST_LIMITS.maxArgs} arguments`);
  });
});

describe("envFrom", () => {
  test("as the standalone executable's process.env: the last entry of a name wins, nameless entries are dropped", () => {
    expect(envFrom(["A=1", "B=x=y", "A=2", "=nameless", "NOEQUALS", "E="])).toEqual(Object.assign(Object.create(null), { A: "2", B: "x=y", E: "" }));
  });

  test("a variable named __proto__ is a variable, not a prototype", () => {
    const env = envFrom(["__proto__=polluted", "X=1"]);
    expect(Object.keys(env)).toEqual(["__proto__", "X"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(env)).toBeNull();
  });
});
