/**
 * One shim's connection, on the agent's main thread: assemble the request (protocol.ts), decide
 * whether to serve it (decide), then relay stdin on demand and send the answer. A broken or
 * malformed peer closes this connection only; the call it started, if any, still runs to its end
 * and its answer is dropped (as a process whose caller went away).
 */
import type { Socket } from "bun";
import { clockMs } from "./call-cells.ts";
import type { StdinError } from "./messages.ts";
import type { Job, Offered } from "./pool.ts";
import type { Refusal } from "./refusal.ts";
import {
  encodeChunks,
  encodeExit,
  encodeFrame,
  envFrom,
  Frame,
  FrameDecoder,
  MAX_STDIN_BYTES,
  ProtocolError,
  RequestAssembler,
  type RawFrame,
  type ShimRequest,
} from "./protocol.ts";

/** What tells a waiting call's shim that it still waits (the same bytes every time). */
const QUEUED_FRAME = encodeFrame(Frame.QUEUED);

/**
 * A request the agent offers to its pool (which accepts or refuses it, now or within its admission
 * bound) or refuses at once (the shim then runs the standalone executable).
 */
export type Decision = { serve: true; offer(job: CallerJob): Offered } | { serve: false; reason: Refusal };

/** A job as the connection knows it: what the decision adds (the plugin, the attachment) left out. */
export type CallerJob = Omit<Job, "plugin" | "attachment">;

export interface ConnectionHooks {
  /** Whether to serve `request` from the peer on `fd` (and how to run it). */
  decide(request: ShimRequest, fd: number): Decision;
  /** A connection ended badly (protocol error, timeout): for the log. */
  problem(reason: string): void;
}

/** A peer that sends no complete request within this time is dropped. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** An accepted call whose stdin is not complete within this time fails reading it (its thread waits on the caller meanwhile). */
export const STDIN_TIMEOUT_MS = 10_000;

/** The state of one connection; Bun's socket handlers call the methods. */
export class Connection {
  readonly #socket: Socket<unknown>;
  readonly #hooks: ConnectionHooks;
  readonly #decoder = new FrameDecoder();
  readonly #request = new RequestAssembler();
  /** The request was complete and handed on: frames that follow are stdin, once accepted, else a protocol error. */
  #decided = false;
  #accepted = false;
  #closed = false;
  /** The call offered to the pool, told when the caller goes away. */
  #offered: Offered | undefined;
  /** Output not yet taken by the socket (backpressure). */
  #pending: Uint8Array[] = [];
  #endAfterFlush = false;
  #stdin: { chunks: Uint8Array[]; bytes: number; wanted: boolean; done: ((got: Uint8Array | StdinError) => void) | undefined } = {
    chunks: [],
    bytes: 0,
    wanted: false,
    done: undefined,
  };
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(socket: Socket<unknown>, hooks: ConnectionHooks) {
    this.#socket = socket;
    this.#hooks = hooks;
    this.#timer = setTimeout(() => this.#fail("no complete request in time"), REQUEST_TIMEOUT_MS);
  }

  data(bytes: Uint8Array): void {
    if (this.#closed) return;
    let frames: RawFrame[];
    try {
      frames = this.#decoder.push(bytes);
      for (const frame of frames) this.#frame(frame);
    } catch (err) {
      this.#fail(err instanceof ProtocolError ? err.message : `internal error: ${(err as Error).message}`);
    }
  }

  /** The socket can take more output. */
  drain(): void {
    this.#flush();
  }

  /** The peer went away (or the socket failed): a call it started is ended (pool.ts). */
  closed(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#stdin.done?.({ message: "the caller closed the connection" });
    this.#stdin.done = undefined;
    this.#offered?.gone();
  }

  #frame(frame: RawFrame): void {
    if (!this.#decided) {
      const request = this.#request.add(frame);
      if (request !== undefined) this.#decide(request);
      return;
    }
    if (!this.#accepted) throw new ProtocolError(`unexpected frame type ${frame.type} before the agent answered`);
    const stdin = this.#stdin;
    switch (frame.type) {
      case Frame.STDIN:
        if (!stdin.wanted) throw new ProtocolError("stdin that was not asked for");
        stdin.bytes += frame.payload.length;
        if (stdin.bytes <= MAX_STDIN_BYTES) stdin.chunks.push(frame.payload);
        return;
      case Frame.STDIN_END:
      case Frame.STDIN_ERROR: {
        if (!stdin.wanted) throw new ProtocolError("stdin that was not asked for");
        stdin.wanted = false;
        clearTimeout(this.#timer);
        const done = stdin.done;
        stdin.done = undefined;
        if (frame.type === Frame.STDIN_ERROR) {
          if (frame.payload.length !== 4) throw new ProtocolError("malformed STDIN_ERROR");
          done?.({ errno: new DataView(frame.payload.buffer, frame.payload.byteOffset).getUint32(0, true) });
        } else if (stdin.bytes > MAX_STDIN_BYTES) {
          done?.({ message: `stdin of ${stdin.bytes} bytes exceeds the agent's limit of ${MAX_STDIN_BYTES}` });
        } else {
          done?.(Buffer.concat(stdin.chunks));
        }
        stdin.chunks = [];
        return;
      }
      default:
        throw new ProtocolError(`unexpected frame type ${frame.type} during a call`);
    }
  }

  #decide(request: ShimRequest): void {
    clearTimeout(this.#timer);
    this.#decided = true;
    // Bun's socket has its fd at run time; its type declarations do not say so.
    const decision = this.#hooks.decide(request, (this.#socket as unknown as { fd: number }).fd);
    if (!decision.serve) {
      this.#refuse(decision.reason);
      return;
    }
    let stdin: Promise<Uint8Array | StdinError> | undefined;
    let acceptedAt = 0;
    this.#offered = decision.offer({
      argv: request.argv,
      env: envFrom(request.envEntries),
      pid: request.pid,
      umask: request.umask,
      accept: () => {
        this.#accepted = true;
        acceptedAt = clockMs();
        // The acceptance and the request for stdin go out in one write, made once the call is on
        // its way to its thread (waking the thread is the longest step: the pool posts the call
        // right after accepting it). stdin is asked for at once, while the call starts, so it is
        // there when the call reads it. (A call that does not read it answers anyway; the shim
        // then stops sending.)
        stdin = this.#expectStdin();
        this.#pending.push(Buffer.concat([encodeFrame(Frame.ACCEPTED), encodeFrame(Frame.SEND_STDIN)]));
        queueMicrotask(() => this.#flush());
      },
      queued: () => this.#send([QUEUED_FRAME], false),
      refuse: (reason) => this.#refuse(reason),
      stdin: () => stdin ?? Promise.resolve({ message: "the call was not accepted" }),
      stdinPendingSince: () => (this.#stdin.wanted ? acceptedAt : undefined),
      finish: (out) => {
        const enc = new TextEncoder();
        this.#send([...encodeChunks(Frame.STDOUT, enc.encode(out.stdout)), ...encodeChunks(Frame.STDERR, enc.encode(out.stderr)), encodeExit(out.status)], true);
      },
    });
  }

  #refuse(refusal: Refusal): void {
    this.#send([encodeFrame(Frame.REFUSED, refusal.text)], true);
  }

  /** The call's stdin, taken from the frames that follow the acceptance (which asks for them); or why it cannot be had. */
  #expectStdin(): Promise<Uint8Array | StdinError> {
    if (this.#closed) return Promise.resolve({ message: "the caller closed the connection" });
    return new Promise((resolve) => {
      this.#stdin = { chunks: [], bytes: 0, wanted: true, done: resolve };
      this.#timer = setTimeout(() => this.#stdinTimedOut(), STDIN_TIMEOUT_MS);
    });
  }

  /** The caller did not send its whole stdin in time: the call fails reading it; later stdin frames break the connection. */
  #stdinTimedOut(): void {
    const stdin = this.#stdin;
    if (!stdin.wanted) return;
    stdin.wanted = false;
    stdin.chunks = [];
    const done = stdin.done;
    stdin.done = undefined;
    done?.({ message: `no complete stdin from the caller within ${STDIN_TIMEOUT_MS / 1000} s` });
  }

  #send(frames: Uint8Array[], thenEnd: boolean): void {
    if (this.#closed) return;
    // One write for all of them (an answer is a few frames).
    this.#pending.push(frames.length === 1 ? frames[0]! : Buffer.concat(frames));
    this.#endAfterFlush ||= thenEnd;
    this.#flush();
  }

  #flush(): void {
    while (this.#pending.length > 0 && !this.#closed) {
      const head = this.#pending[0]!;
      const n = this.#socket.write(head);
      if (n < 0) return this.#fail("write failed");
      if (n < head.length) {
        this.#pending[0] = head.subarray(n);
        return; // drain() continues
      }
      this.#pending.shift();
    }
    if (this.#pending.length === 0 && this.#endAfterFlush && !this.#closed) {
      this.#closed = true;
      this.#socket.end();
    }
  }

  #fail(reason: string): void {
    if (this.#closed) return;
    this.#hooks.problem(reason);
    this.closed();
    this.#socket.end();
  }
}
