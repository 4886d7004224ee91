/**
 * A client of the agent's protocol (agent/protocol.ts) written in TypeScript, for tests that talk to
 * an agent without the C shim: a whole call, or raw bytes.
 */
import { encodeFrame, Frame, FrameDecoder, PROTOCOL_VERSION, u32 } from "../../agent/protocol.ts";

export interface AgentCall {
  buildId: string;
  argv: string[];
  env: Record<string, string>;
  stdin?: string;
  /** Never send stdin (a terminal that is never closed); default false. */
  holdStdin?: boolean;
  /** Sent as the caller's pid (default: this process's, which the kernel reports too). */
  pid?: number;
  umask?: number;
}

export type AgentAnswer =
  | { accepted: false; reason: string }
  | { accepted: true; stdout: string; stderr: string; status: number | undefined; stdinAsked: boolean; closedEarly: boolean };

/** The frames of a request, as the shim sends them. */
export function requestFrames(call: AgentCall): Uint8Array[] {
  const hello = new Uint8Array(12 + call.buildId.length);
  const v = new DataView(hello.buffer);
  v.setUint32(0, PROTOCOL_VERSION, true);
  v.setUint32(4, call.pid ?? process.pid, true);
  v.setUint32(8, call.umask ?? 0o022, true);
  hello.set(new TextEncoder().encode(call.buildId), 12);
  return [
    encodeFrame(Frame.HELLO, hello),
    ...call.argv.map((a) => encodeFrame(Frame.ARG, a)),
    ...Object.entries(call.env).map(([k, v]) => encodeFrame(Frame.ENV, `${k}=${v}`)),
    encodeFrame(Frame.END),
  ];
}

/**
 * Connects to `path`, sends `bytes`, and collects every frame until the agent closes, or until `ms`
 * pass (then this side hangs up: `closed` false).
 */
export async function exchange(path: string, bytes: Uint8Array[], onFrame?: (type: number, payload: Uint8Array, send: (b: Uint8Array) => void) => void, ms = 10_000): Promise<{ frames: { type: number; payload: Uint8Array }[]; closed: boolean }> {
  const decoder = new FrameDecoder();
  const frames: { type: number; payload: Uint8Array }[] = [];
  return new Promise((resolve, reject) => {
    let done = false;
    let socket: { end(): void } | undefined;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (!closed) socket?.end();
      resolve({ frames, closed });
    };
    const timer = setTimeout(() => finish(false), ms);
    Bun.connect({
      unix: path,
      socket: {
        open(s) {
          socket = s;
          for (const b of bytes) s.write(b);
        },
        data(s, data) {
          for (const f of decoder.push(data)) {
            frames.push(f);
            onFrame?.(f.type, f.payload, (b) => s.write(b));
          }
        },
        close() {
          finish(true);
        },
        error() {
          finish(true);
        },
      },
    }).catch(reject);
  });
}

/** One whole call through the agent at `path`. */
export async function callAgent(path: string, call: AgentCall): Promise<AgentAnswer> {
  let stdinAsked = false;
  const { frames } = await exchange(path, requestFrames(call), (type, _p, send) => {
    if (type !== Frame.SEND_STDIN) return;
    stdinAsked = true;
    if (call.holdStdin === true) return;
    const data = new TextEncoder().encode(call.stdin ?? "");
    if (data.length > 0) send(encodeFrame(Frame.STDIN, data));
    send(encodeFrame(Frame.STDIN_END));
  });
  // QUEUED frames (the call waited for a thread) may come before the answer.
  const first = frames.find((f) => f.type !== Frame.QUEUED);
  const text = (type: number) => frames.filter((f) => f.type === type).map((f) => new TextDecoder().decode(f.payload)).join("");
  if (first?.type === Frame.REFUSED) return { accepted: false, reason: text(Frame.REFUSED) };
  if (first?.type !== Frame.ACCEPTED) throw new Error(`the agent answered neither ACCEPTED nor REFUSED (${frames.length} frames)`);
  const exit = frames.find((f) => f.type === Frame.EXIT);
  return {
    accepted: true,
    stdout: text(Frame.STDOUT),
    stderr: text(Frame.STDERR),
    status: exit === undefined ? undefined : u32(exit.payload),
    stdinAsked,
    closedEarly: exit === undefined,
  };
}
