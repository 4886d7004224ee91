/**
 * DHCP client exchanges on one {@link DhcpSocket} (RFC 2131 §3.1, §4.3.2, §4.4): the messages of
 * INIT (DISCOVER/REQUEST), RENEWING, REBINDING and RELEASE, one exchange with re-sends, and
 * upstream's retry schedule (upstream plugins/ipam/dhcp/lease.go).
 */
import {
  BOOTREPLY,
  BOOTREQUEST,
  BROADCAST_IP,
  DHCPACK,
  DHCPDISCOVER,
  DHCPNAK,
  DHCPOFFER,
  DHCPRELEASE,
  DHCPREQUEST,
  FLAG_BROADCAST,
  OPT_CLIENT_ID,
  OPT_MAX_MESSAGE_SIZE,
  OPT_MESSAGE,
  OPT_MESSAGE_TYPE,
  OPT_PARAMETER_REQUEST_LIST,
  OPT_REQUESTED_IP,
  OPT_SERVER_ID,
  decodeMessage,
  encodeMessage,
  ipv4Bytes,
  messageType,
  optionIPs,
  type DhcpMessage,
} from "../packet.ts";
import { messageOf } from "../../../shared/cni/errors.ts";
import type { DhcpSocket } from "./dhcp-socket.ts";

/** Sends per exchange before giving up on it (the Go client library's default). */
const SENDS_PER_EXCHANGE = 3;
/** Upstream's fast retries: this many at FAST_RETRY_MS ± jitter, then doubling from SLOW_START_MS. */
const FAST_RETRIES = 4;
const FAST_RETRY_MS = 2000;
const SLOW_START_MS = 8000;
const JITTER_MS = 1000;

export interface ClientParams {
  /** Option 61 value (type byte 0 + `<containerID>/<network>/<ifname>`, ≤ 255 bytes). */
  clientId: Uint8Array;
  /** Interface MAC (chaddr). */
  mac: Uint8Array;
  provide: ReadonlyMap<number, Uint8Array>;
  request: readonly number[];
  timeoutMs: number;
  resendMaxMs: number;
  resendTimeoutMs: number;
}

export class DhcpNakError extends Error {
  override name = "DhcpNakError";
}

export class DhcpTimeoutError extends Error {
  override name = "DhcpTimeoutError";
}

/**
 * No lease before the deadline: upstream's `errNoMoreTries` (lease.go), whose text is all the daemon
 * answers over the wire. The last attempt's failure is the `cause`, for the daemon's log
 * ({@link failureDetail}).
 */
export class NoMoreTriesError extends Error {
  override name = "NoMoreTriesError";
  constructor(last: unknown) {
    super("no more tries", { cause: last });
  }
}

/** A failure as the daemon logs it: the message, and after "no more tries" the last attempt's failure. */
export function failureDetail(err: unknown): string {
  return err instanceof NoMoreTriesError ? `${err.message}: ${messageOf(err.cause)}` : messageOf(err);
}

/** Option 61 for a lease key, truncated like upstream (type byte + at most 254 bytes). */
export function clientIdFor(key: string): Uint8Array {
  const id = new TextEncoder().encode(key).subarray(0, 254);
  const out = new Uint8Array(id.byteLength + 1);
  out.set(id, 1);
  return out;
}

export function randomXid(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0] ?? 1;
}

/** MAC text (`aa:bb:…`) to bytes. */
export function macBytes(mac: string): Uint8Array {
  return Uint8Array.from(mac.split(":").map((h) => parseInt(h, 16)));
}

interface BuildOptions {
  type: number;
  xid: number;
  ciaddr?: string;
  broadcast: boolean;
  extra?: [number, Uint8Array][];
  /** RELEASE carries only type, server id and client id. */
  minimal?: boolean;
}

/** Builds one client message with the common options (57, 61, provided options, 55). */
export function buildMessage(p: ClientParams, o: BuildOptions): DhcpMessage {
  const options = new Map<number, Uint8Array>();
  options.set(OPT_MESSAGE_TYPE, Uint8Array.of(o.type));
  for (const [code, v] of o.extra ?? []) options.set(code, v);
  if (!o.minimal) options.set(OPT_MAX_MESSAGE_SIZE, Uint8Array.of(1500 >> 8, 1500 & 0xff));
  options.set(OPT_CLIENT_ID, p.clientId);
  if (!o.minimal) {
    for (const [code, v] of p.provide) options.set(code, v);
    if (p.request.length > 0) options.set(OPT_PARAMETER_REQUEST_LIST, Uint8Array.from(p.request));
  }
  return {
    op: BOOTREQUEST,
    xid: o.xid,
    secs: 0,
    flags: o.broadcast ? FLAG_BROADCAST : 0,
    ciaddr: o.ciaddr ?? "0.0.0.0",
    yiaddr: "0.0.0.0",
    siaddr: "0.0.0.0",
    giaddr: "0.0.0.0",
    chaddr: p.mac,
    options,
  };
}

function sameMac(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength >= b.byteLength && b.every((x, i) => a[i] === x);
}

/** Server identifier (option 54) of a reply, or "" when missing. */
export function serverIdOf(m: DhcpMessage): string {
  return optionIPs(m, OPT_SERVER_ID)[0] ?? "";
}

/**
 * One exchange (DHCPv4 or v6): sends `bytes` to `dest` and waits `timeoutMs` for a datagram that
 * `decode` parses (malformed ones are skipped) and `accept` takes; re-sends up to
 * {@link SENDS_PER_EXCHANGE} times. A send that fails (no route yet, interface down) counts as a
 * lost packet.
 */
export async function exchangeBytes<M>(
  sock: DhcpSocket,
  timeoutMs: number,
  bytes: Uint8Array,
  dest: string,
  decode: (raw: Uint8Array) => M,
  accept: (m: M) => boolean,
  cancelled: () => boolean,
): Promise<M> {
  const take = (raw: Uint8Array): M | undefined => {
    let m: M;
    try {
      m = decode(raw);
    } catch {
      return undefined;
    }
    return accept(m) ? m : undefined;
  };
  let lastSendError: unknown;
  for (let i = 0; i < SENDS_PER_EXCHANGE && !cancelled(); i++) {
    sock.drain();
    try {
      sock.send(bytes, dest);
    } catch (err) {
      lastSendError = err;
    }
    const reply = await sock.receive(Date.now() + timeoutMs, take, cancelled);
    if (reply !== undefined) return reply;
  }
  const why = lastSendError instanceof Error ? ` (last send: ${lastSendError.message})` : "";
  throw new DhcpTimeoutError(`no reply after ${SENDS_PER_EXCHANGE} tries of ${timeoutMs} ms${why}`);
}

/** A DHCPv4 exchange: replies must carry our xid and MAC and pass `accept`. */
export function exchange(
  sock: DhcpSocket,
  p: ClientParams,
  msg: DhcpMessage,
  dest: string,
  accept: (m: DhcpMessage) => boolean,
  cancelled: () => boolean,
): Promise<DhcpMessage> {
  const ours = (m: DhcpMessage): boolean => m.op === BOOTREPLY && m.xid === msg.xid && sameMac(m.chaddr, p.mac) && accept(m);
  return exchangeBytes(sock, p.timeoutMs, encodeMessage(msg), dest, decodeMessage, ours, cancelled);
}

function nakError(m: DhcpMessage): DhcpNakError {
  const text = m.options.get(OPT_MESSAGE);
  return new DhcpNakError(`server rejected request with Nak${text ? `: ${new TextDecoder().decode(text)}` : ""}`);
}

/** INIT → BOUND: DISCOVER, OFFER, REQUEST, ACK. `requestedIp` asks for an address (INIT-REBOOT-like). */
export async function acquireOnce(sock: DhcpSocket, p: ClientParams, cancelled: () => boolean, requestedIp?: string): Promise<DhcpMessage> {
  const xid = randomXid();
  const hint: [number, Uint8Array][] = requestedIp ? [[OPT_REQUESTED_IP, ipv4Bytes(requestedIp)]] : [];
  const discover = buildMessage(p, { type: DHCPDISCOVER, xid, broadcast: true, extra: hint });
  const offer = await exchange(sock, p, discover, BROADCAST_IP, (m) => messageType(m) === DHCPOFFER && serverIdOf(m) !== "", cancelled);
  const server = serverIdOf(offer);
  const request = buildMessage(p, {
    type: DHCPREQUEST,
    xid,
    broadcast: true,
    extra: [
      [OPT_REQUESTED_IP, ipv4Bytes(offer.yiaddr)],
      [OPT_SERVER_ID, ipv4Bytes(server)],
    ],
  });
  const reply = await exchange(
    sock,
    p,
    request,
    BROADCAST_IP,
    (m) => (messageType(m) === DHCPACK || messageType(m) === DHCPNAK) && serverIdOf(m) === server,
    cancelled,
  );
  if (messageType(reply) === DHCPNAK) throw nakError(reply);
  return reply;
}

/** RENEWING (unicast to the server, `dest` = server) or REBINDING (`dest` = broadcast): REQUEST with ciaddr. */
export async function renewOnce(sock: DhcpSocket, p: ClientParams, ack: DhcpMessage, dest: string, cancelled: () => boolean): Promise<DhcpMessage> {
  const msg = buildMessage(p, { type: DHCPREQUEST, xid: randomXid(), ciaddr: ack.yiaddr, broadcast: false });
  const reply = await exchange(sock, p, msg, dest, (m) => messageType(m) === DHCPACK || messageType(m) === DHCPNAK, cancelled);
  if (messageType(reply) === DHCPNAK) throw nakError(reply);
  return reply;
}

/**
 * INIT-REBOOT (RFC 2131 §4.3.2): broadcast REQUEST for `ip` without ciaddr or server id, broadcast
 * flag set. Used to renew while the interface does not carry the leased address (a unicast reply
 * to ciaddr could not be received then).
 */
export async function rebootOnce(sock: DhcpSocket, p: ClientParams, ip: string, cancelled: () => boolean): Promise<DhcpMessage> {
  const msg = buildMessage(p, { type: DHCPREQUEST, xid: randomXid(), broadcast: true, extra: [[OPT_REQUESTED_IP, ipv4Bytes(ip)]] });
  const reply = await exchange(sock, p, msg, BROADCAST_IP, (m) => messageType(m) === DHCPACK || messageType(m) === DHCPNAK, cancelled);
  if (messageType(reply) === DHCPNAK) throw nakError(reply);
  return reply;
}

/** Sends DHCPRELEASE (unicast to the server identifier); no reply is expected. */
export function sendRelease(sock: DhcpSocket, p: ClientParams, ack: DhcpMessage, dest?: string): void {
  const server = serverIdOf(ack);
  const msg = buildMessage(p, {
    type: DHCPRELEASE,
    xid: randomXid(),
    ciaddr: ack.yiaddr,
    broadcast: false,
    extra: [[OPT_SERVER_ID, ipv4Bytes(server)]],
    minimal: true,
  });
  sock.send(encodeMessage(msg), dest ?? server);
}

/** Delays between attempts: 2 s ± 1 s four times, then 8, 16, 32 … s ± 1 s, capped at `maxMs`. */
export function* backoffDelays(maxMs: number, jitter: () => number = () => (Math.random() * 2 - 1) * JITTER_MS): Generator<number> {
  for (let i = 0; i < FAST_RETRIES; i++) yield Math.max(0, FAST_RETRY_MS + jitter());
  let d = SLOW_START_MS;
  for (;;) {
    yield Math.max(0, Math.min(d, maxMs) + jitter());
    if (d < maxMs) d *= 2;
  }
}

/** What a retry sequence needs of the client parameters. */
export interface RetryParams {
  resendMaxMs: number;
}

/**
 * Runs `attempt` until it succeeds, sleeping the back-off between failures, bounded by
 * `deadline` (epoch ms). Throws a {@link NoMoreTriesError} with the last failure as its cause.
 */
/**
 * The retry loop of an acquisition that a DEL of the same attachment may call off (`signal`): its
 * cancel test, and a back-off sleep that ends as soon as it is called off.
 */
export function abortableRetries(signal: AbortSignal): { cancelled: () => boolean; sleep: (ms: number) => Promise<void> } {
  return {
    cancelled: () => signal.aborted,
    sleep: (ms) =>
      new Promise((resolve) => {
        if (signal.aborted) return resolve();
        const done = (): void => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener("abort", done);
      }),
  };
}

export async function withRetries<T>(
  attempt: () => Promise<T>,
  p: RetryParams,
  deadline: number,
  cancelled: () => boolean,
  sleep: (ms: number) => Promise<void>,
): Promise<T> {
  const delays = backoffDelays(p.resendMaxMs);
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      const delay = delays.next().value as number;
      if (cancelled() || Date.now() + delay >= deadline) {
        throw new NoMoreTriesError(err);
      }
      await sleep(delay);
    }
  }
}
