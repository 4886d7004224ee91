/**
 * The shim ↔ agent protocol (docs/resident.md; shim/cni-shim.c is the other end): frames of a
 * 5-byte header — u32 little-endian payload length, u8 type — and the payload. Every frame is
 * bounded (MAX_PAYLOAD) on both sides, and so are the totals this end accepts (REQUEST_LIMITS,
 * MAX_STDIN_BYTES): a frame or a request beyond them closes that connection only.
 *
 * A call: the shim sends HELLO, one ARG per argument (argv[0] first), one ENV per environment entry
 * and END; the agent answers ACCEPTED or REFUSED (then the shim runs the standalone executable),
 * after any number of QUEUED (the call waits for a worker thread; each renews the shim's budget
 * for the acceptance, up to a cap of the shim's own). With
 * ACCEPTED the agent asks for stdin (SEND_STDIN; the shim answers with STDIN chunks and STDIN_END,
 * or STDIN_ERROR, and stops early when the answer comes first), then writes STDOUT and STDERR
 * chunks and ends with EXIT.
 */

export const PROTOCOL_VERSION = 1;
/** The largest payload of any frame, either way. */
export const MAX_PAYLOAD = 256 * 1024;
/** Output is sent in chunks of at most this many bytes. */
export const CHUNK = 64 * 1024;
export const HEADER_BYTES = 5;

/** Frame types (one ASCII letter each, as in shim/cni-shim.c). */
export const Frame = {
  // shim → agent
  HELLO: 0x48, // 'H': u32 protocol, u32 pid, u32 umask, build id
  ARG: 0x41, // 'A'
  ENV: 0x45, // 'E'
  END: 0x51, // 'Q'
  STDIN: 0x49, // 'I'
  STDIN_END: 0x5a, // 'Z'
  STDIN_ERROR: 0x59, // 'Y': u32 errno
  // agent → shim
  ACCEPTED: 0x4b, // 'K'
  REFUSED: 0x52, // 'R': reason
  QUEUED: 0x50, // 'P': the call waits, not yet accepted
  SEND_STDIN: 0x53, // 'S'
  STDOUT: 0x4f, // 'O'
  STDERR: 0x57, // 'W'
  EXIT: 0x58, // 'X': u32 status
} as const;

/** Bounds of one request (argv + environment) as this end accepts it. */
export const REQUEST_LIMITS = { maxArgs: 4096, maxEnv: 16384, maxBytes: 4 * 1024 * 1024 };
/** The most stdin a call may send (a network configuration with its prevResult is kilobytes). */
export const MAX_STDIN_BYTES = 64 * 1024 * 1024;

/** A broken peer: a frame or request out of bounds or out of order. Closes that connection only. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
}

export interface RawFrame {
  type: number;
  payload: Uint8Array;
}

/** Splits a byte stream into frames; refuses a payload over MAX_PAYLOAD before buffering it. */
export class FrameDecoder {
  #buf = new Uint8Array(0);

  /** Adds received bytes; returns the frames now complete (throws ProtocolError on an oversized one). */
  push(data: Uint8Array): RawFrame[] {
    const buf = this.#buf.length === 0 ? data : concat(this.#buf, data);
    const frames: RawFrame[] = [];
    let off = 0;
    for (;;) {
      if (buf.length - off < HEADER_BYTES) break;
      const len = u32(buf, off);
      if (len > MAX_PAYLOAD) throw new ProtocolError(`frame of ${len} bytes exceeds ${MAX_PAYLOAD}`);
      if (buf.length - off - HEADER_BYTES < len) break;
      frames.push({ type: buf[off + 4]!, payload: buf.slice(off + HEADER_BYTES, off + HEADER_BYTES + len) });
      off += HEADER_BYTES + len;
    }
    this.#buf = off === buf.length ? new Uint8Array(0) : buf.slice(off);
    return frames;
  }

  /** Bytes received that do not yet make a frame. */
  get pending(): number {
    return this.#buf.length;
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

export function u32(b: Uint8Array, off = 0): number {
  return (b[off]! | (b[off + 1]! << 8) | (b[off + 2]! << 16) | (b[off + 3]! << 24)) >>> 0;
}

function u32Bytes(v: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, v >>> 0, true);
  return b;
}

/** One frame's bytes (a payload over MAX_PAYLOAD is a programming error). */
export function encodeFrame(type: number, payload: Uint8Array | string = new Uint8Array(0)): Uint8Array {
  const body = typeof payload === "string" ? new TextEncoder().encode(payload) : payload;
  if (body.length > MAX_PAYLOAD) throw new RangeError(`frame payload of ${body.length} bytes exceeds ${MAX_PAYLOAD}`);
  const out = new Uint8Array(HEADER_BYTES + body.length);
  out.set(u32Bytes(body.length));
  out[4] = type;
  out.set(body, HEADER_BYTES);
  return out;
}

/** `bytes` as frames of `type`, at most CHUNK bytes each (none for empty output). */
export function encodeChunks(type: number, bytes: Uint8Array): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let off = 0; off < bytes.length; off += CHUNK) frames.push(encodeFrame(type, bytes.subarray(off, off + CHUNK)));
  return frames;
}

/** The EXIT frame. */
export function encodeExit(status: number): Uint8Array {
  return encodeFrame(Frame.EXIT, u32Bytes(status));
}

/** What the shim sends before the agent decides. */
export interface ShimRequest {
  protocol: number;
  /** The shim's pid as it says (checked against the socket's peer credentials). */
  pid: number;
  umask: number;
  buildId: string;
  argv: string[];
  /** The environment entries ("NAME=value"), in the shim's order (see envFrom). */
  envEntries: string[];
}

const decoder = new TextDecoder("utf-8", { fatal: false });

/**
 * Assembles a request from its frames (HELLO, ARG*, ENV*, END), enforcing order and bounds. `add`
 * returns the request once END arrived, else undefined.
 */
export class RequestAssembler {
  #hello: Omit<ShimRequest, "argv" | "envEntries"> | undefined;
  #argv: string[] = [];
  #env: string[] = [];
  #bytes = 0;

  add(frame: RawFrame): ShimRequest | undefined {
    const { type, payload } = frame;
    if (this.#hello === undefined) {
      if (type !== Frame.HELLO) throw new ProtocolError(`expected HELLO, got frame type ${type}`);
      if (payload.length < 12 || payload.length > 12 + 256) throw new ProtocolError(`malformed HELLO (${payload.length} bytes)`);
      this.#hello = { protocol: u32(payload, 0), pid: u32(payload, 4), umask: u32(payload, 8), buildId: decoder.decode(payload.subarray(12)) };
      return undefined;
    }
    this.#bytes += payload.length;
    if (this.#bytes > REQUEST_LIMITS.maxBytes) throw new ProtocolError(`request exceeds ${REQUEST_LIMITS.maxBytes} bytes`);
    switch (type) {
      case Frame.ARG:
        if (this.#env.length > 0) throw new ProtocolError("ARG after ENV");
        if (this.#argv.length >= REQUEST_LIMITS.maxArgs) throw new ProtocolError(`more than ${REQUEST_LIMITS.maxArgs} arguments`);
        this.#argv.push(decoder.decode(payload));
        return undefined;
      case Frame.ENV:
        if (this.#env.length >= REQUEST_LIMITS.maxEnv) throw new ProtocolError(`more than ${REQUEST_LIMITS.maxEnv} environment entries`);
        this.#env.push(decoder.decode(payload));
        return undefined;
      case Frame.END:
        if (this.#argv.length === 0) throw new ProtocolError("request without argv[0]");
        return { ...this.#hello, argv: this.#argv, envEntries: this.#env };
      default:
        throw new ProtocolError(`unexpected frame type ${type} in a request`);
    }
  }
}

/**
 * The environment as the standalone executable, started with `entries`, sees it in `process.env`:
 * the last entry of a name wins (Bun's rule; glibc's getenv would take the first); an entry
 * without a name before "=" is ignored.
 */
export function envFrom(entries: readonly string[]): Record<string, string> {
  // No prototype: a variable named "__proto__" is just a variable.
  const env = Object.create(null) as Record<string, string>;
  for (const e of entries) {
    const eq = e.indexOf("=");
    if (eq <= 0) continue;
    env[e.slice(0, eq)] = e.slice(eq + 1);
  }
  return env;
}
