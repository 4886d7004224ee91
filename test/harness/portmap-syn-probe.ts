/**
 * The localnet probe (upstream #729): from inside a container namespace, send a
 * hand-crafted TCP SYN straight onto the wire (AF_PACKET, so the container's own routing — which
 * would never send to 127.0.0.1 — is bypassed) with the bridge gateway's MAC as destination, and
 * report what comes back to that SYN: "syn-ack" (a host service answered: reachable), "rst" (the
 * host refused: the packet got through routing but nothing listens), or "none".
 *
 * The sender is a short python3 program run with `nsenter --net=<container netns>`; the container
 * side is root with CAP_NET_RAW, as a container with NET_RAW would be. Replies are read from the
 * same AF_PACKET socket, because a reply from 127.0.0.1 is a martian source for the container's
 * kernel and would never reach an AF_INET socket there.
 */

/** What came back to the probe's SYN. */
export type SynProbeOutcome = "syn-ack" | "rst" | "none";

export interface SynProbe {
  /** The container's netns path. */
  netns: string;
  /** The container interface to send on (its bridge-side peer is a bridge port). */
  ifName: string;
  /** Source address: the container's own IPv4 address. */
  srcIP: string;
  /** Destination MAC: the bridge (gateway) MAC on the host. */
  dstMac: string;
  dstIP: string;
  dstPort: number;
  /** How long to wait for a reply (the SYN is re-sent a few times meanwhile). Default 2000 ms. */
  timeoutMs?: number;
}

const PROGRAM = String.raw`
import random, socket, struct, sys, time
ifname, src_ip, dst_mac, dst_ip, dport, timeout_ms = sys.argv[1:7]
dport = int(dport); timeout = int(timeout_ms) / 1000.0
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((ifname, 0))
src_mac = s.getsockname()[4]
sport = random.randint(40000, 60000); seq = random.randint(0, 2**32 - 1)
src = socket.inet_aton(src_ip); dst = socket.inet_aton(dst_ip)
tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, 0x02, 64240, 0, 0)
tcp = tcp[:16] + struct.pack("!H", csum(src + dst + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)) + tcp[18:]
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), random.randint(0, 65535), 0x4000, 64, 6, 0, src, dst)
ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
frame = bytes.fromhex(dst_mac.replace(":", "")) + src_mac + b"\x08\x00" + ip + tcp
deadline = time.time() + timeout; next_send = 0.0; outcome = "none"
while outcome == "none":
    now = time.time()
    if now >= deadline: break
    if now >= next_send:
        s.send(frame); next_send = now + 0.5
    s.settimeout(max(0.01, min(deadline, next_send) - now))
    try:
        pkt, addr = s.recvfrom(65535)
    except socket.timeout:
        continue
    if addr[2] == socket.PACKET_OUTGOING or len(pkt) < 14 + 20 + 20: continue
    ihl = (pkt[14] & 0x0f) * 4
    if pkt[14 + 9] != 6 or pkt[14 + 12:14 + 16] != dst or pkt[14 + 16:14 + 20] != src: continue
    t = pkt[14 + ihl:]
    rs, rd = struct.unpack("!HH", t[:4]); flags = t[13]
    if rs != dport or rd != sport: continue
    if flags & 0x12 == 0x12: outcome = "syn-ack"
    elif flags & 0x04: outcome = "rst"
print(outcome)
`;

/** True when python3 (the probe's sender) is on PATH. */
export function synProbeAvailable(): boolean {
  return Bun.which("python3") !== null;
}

/** Sends the SYN and reports the outcome; throws when the sender itself fails. */
export function synProbe(p: SynProbe): SynProbeOutcome {
  const cmd = ["nsenter", `--net=${p.netns}`, "python3", "-c", PROGRAM, p.ifName, p.srcIP, p.dstMac, p.dstIP, String(p.dstPort), String(p.timeoutMs ?? 2000)];
  const r = Bun.spawnSync({ cmd, stdout: "pipe", stderr: "pipe", timeout: 30_000 });
  const out = r.stdout.toString().trim();
  if (r.exitCode !== 0 || (out !== "syn-ack" && out !== "rst" && out !== "none")) {
    throw new Error(`SYN probe failed (exit ${r.exitCode}): ${out} ${r.stderr.toString().trim()}`);
  }
  return out;
}
