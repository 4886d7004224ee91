/**
 * A tiny scriptable DHCP server for the lease-lifecycle tests (dnsmasq cannot grant leases
 * shorter than 2 minutes, nor be told to fall silent). Run as its own process INSIDE the server
 * netns (`nsenter --net=<ns> bun dhcp-fake-server.ts '<json options>'`), so node:dgram's lazy bind
 * is harmless here.
 *
 * It listens on <serverIp>:67 (unicast: RENEWING clients) and 255.255.255.255:67 (broadcast:
 * DISCOVER, SELECTING/INIT-REBOOT/REBINDING REQUESTs) with two sockets, so every logged message
 * says how it arrived. It offers `address` with the configured lease/T1/T2, answers until it has
 * sent `answerAcks` ACKs, then only logs; REQUESTs for any other address are NAKed. Each received message is one JSON line on stdout:
 *   {"at":<epoch ms>,"type":"DHCPREQUEST","via":"unicast"|"broadcast","ciaddr":…,"requested":…,"server":…,"answered":bool}
 * The wire format, message types, option codes, ports and broadcast address come from
 * ipam/dhcp/packet.ts (that codec is checked against dnsmasq by test/integration/dhcp.test.ts).
 */
import { createSocket, type Socket } from "node:dgram";
import {
  BOOTREPLY,
  BROADCAST_IP,
  DHCPACK,
  DHCPDISCOVER,
  DHCPNAK,
  DHCPOFFER,
  DHCPREQUEST,
  DHCP_CLIENT_PORT,
  DHCP_SERVER_PORT,
  FLAG_BROADCAST,
  OPT_LEASE_TIME,
  OPT_MESSAGE_TYPE,
  OPT_REBINDING_TIME,
  OPT_RENEWAL_TIME,
  OPT_REQUESTED_IP,
  OPT_ROUTER,
  OPT_SERVER_ID,
  OPT_SUBNET_MASK,
  decodeMessage,
  encodeMessage,
  ipv4Bytes,
  messageType,
  messageTypeName,
  optionIPs,
  uint32Bytes,
  type DhcpMessage,
} from "../../ipam/dhcp/packet.ts";

export interface FakeServerOptions {
  serverIp: string;
  /** The one address handed out. */
  address: string;
  netmask: string;
  leaseSeconds: number;
  t1Seconds?: number;
  t2Seconds?: number;
  /** Stop answering after this many ACKs (default: never). */
  answerAcks?: number;
}

export interface FakeServerEvent {
  at: number;
  type: string;
  via: "unicast" | "broadcast";
  ciaddr: string;
  requested: string | undefined;
  server: string | undefined;
  answered: boolean;
}

function reply(o: FakeServerOptions, req: DhcpMessage, type: number): DhcpMessage {
  const options = new Map<number, Uint8Array>();
  options.set(OPT_MESSAGE_TYPE, Uint8Array.of(type));
  options.set(OPT_SERVER_ID, ipv4Bytes(o.serverIp));
  options.set(OPT_LEASE_TIME, uint32Bytes(o.leaseSeconds));
  if (o.t1Seconds !== undefined) options.set(OPT_RENEWAL_TIME, uint32Bytes(o.t1Seconds));
  if (o.t2Seconds !== undefined) options.set(OPT_REBINDING_TIME, uint32Bytes(o.t2Seconds));
  options.set(OPT_SUBNET_MASK, ipv4Bytes(o.netmask));
  options.set(OPT_ROUTER, ipv4Bytes(o.serverIp));
  return {
    op: BOOTREPLY,
    xid: req.xid,
    secs: 0,
    flags: req.flags,
    ciaddr: req.ciaddr,
    yiaddr: o.address,
    siaddr: o.serverIp,
    giaddr: "0.0.0.0",
    chaddr: req.chaddr,
    options,
  };
}

function main(): void {
  const o = JSON.parse(process.argv[2] ?? "{}") as FakeServerOptions;
  let acks = 0;
  const unicast = createSocket({ type: "udp4", reuseAddr: true });
  const broadcast = createSocket({ type: "udp4", reuseAddr: true });
  const send = (m: DhcpMessage, req: DhcpMessage): void => {
    // RFC 2131 §4.1: to ciaddr when the client has one, else broadcast (we never unicast to yiaddr).
    const dest = req.ciaddr !== "0.0.0.0" && (req.flags & FLAG_BROADCAST) === 0 ? req.ciaddr : BROADCAST_IP;
    unicast.send(encodeMessage(m), DHCP_CLIENT_PORT, dest);
  };
  const onMessage = (via: "unicast" | "broadcast") => (raw: Buffer): void => {
    let m: DhcpMessage;
    try {
      m = decodeMessage(new Uint8Array(raw));
    } catch {
      return;
    }
    const type = messageType(m);
    const live = o.answerAcks === undefined || acks < o.answerAcks;
    let answered = false;
    if (live && type === DHCPDISCOVER) {
      send(reply(o, m, DHCPOFFER), m);
      answered = true;
    } else if (live && type === DHCPREQUEST) {
      const server = optionIPs(m, OPT_SERVER_ID)[0];
      const wanted = optionIPs(m, OPT_REQUESTED_IP)[0] ?? m.ciaddr;
      if (server === undefined || server === o.serverIp) {
        // Authoritative: a request for any other address is NAKed (RFC 2131 §4.3.2).
        if (wanted === o.address) acks++;
        send(reply(o, m, wanted === o.address ? DHCPACK : DHCPNAK), m);
        answered = true;
      }
    }
    const event: FakeServerEvent = {
      at: Date.now(),
      type: messageTypeName(type),
      via,
      ciaddr: m.ciaddr,
      requested: optionIPs(m, OPT_REQUESTED_IP)[0],
      server: optionIPs(m, OPT_SERVER_ID)[0],
      answered,
    };
    console.log(JSON.stringify(event));
  };
  unicast.on("message", onMessage("unicast"));
  broadcast.on("message", onMessage("broadcast"));
  let bound = 0;
  const ready = (): void => {
    if (++bound === 2) console.log(JSON.stringify({ ready: true }));
  };
  unicast.bind(DHCP_SERVER_PORT, o.serverIp, () => {
    unicast.setBroadcast(true);
    ready();
  });
  broadcast.bind(DHCP_SERVER_PORT, BROADCAST_IP, ready);
  const stop = (): void => {
    for (const s of [unicast, broadcast] as Socket[]) s.close();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
}

if (import.meta.main) main();
