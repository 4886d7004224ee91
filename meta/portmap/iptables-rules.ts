/**
 * The portmap iptables rule model (upstream `portmap_iptables.go`), written in the exact form
 * iptables-save prints (`-s/-d` first, `-p tcp -m tcp --dport`, `--dports`), so a rule read back
 * from the kernel compares equal to the rule we generate, whether Go or we added it.
 *
 * nat table, per IP family:
 *   PREROUTING, OUTPUT:    -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
 *   CNI-HOSTPORT-DNAT:     -p tcp -m comment --comment "dnat name: \"<net>\" id: \"<cid>\"" -m multiport --dports 80,81 -j CNI-DN-<hash>
 *   CNI-DN-<hash>:         -s <ctr net> -p tcp -m tcp --dport 80 -j CNI-HOSTPORT-SETMARK   (snat: hairpin)
 *                          -s 127.0.0.1/32 -p tcp -m tcp --dport 80 -j CNI-HOSTPORT-SETMARK (snat, IPv4: localhost)
 *                          -p tcp -m tcp --dport 80 -j DNAT --to-destination <ctr ip>:<port>
 *   CNI-HOSTPORT-SETMARK:  -m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000
 *   CNI-HOSTPORT-MASQ:     -m mark --mark 0x2000/0x2000 -j MASQUERADE
 *   POSTROUTING (first):   -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ
 * filter table, IPv4 with snat (ours; upstream #729):
 *   INPUT (first):         -m comment --comment "CNI portfwd localnet guard" -j CNI-HOSTPORT-LOCALNET
 *   CNI-HOSTPORT-LOCALNET: ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "…" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
 */
import { bitLength, formatIP, type IPFamily } from "../../shared/ip/addr.ts";
import { networkAddress, type CIDR } from "../../shared/ip/cidr.ts";
import { formatChainNameWithPrefix } from "../../shared/firewall/naming.ts";
import type { IptRule } from "../../shared/firewall/iptables/chain.ts";
import { commentMatch } from "../../shared/firewall/iptables/rule.ts";
import type { ForwardedPort } from "./config.ts";
import { hasHostDst, hostText, mappingsForFamily, type PortMapping, type PortmapConfig } from "./config.ts";

export const TOP_LEVEL_DNAT_CHAIN = "CNI-HOSTPORT-DNAT";
export const SETMARK_CHAIN = "CNI-HOSTPORT-SETMARK";
export const MARK_MASQ_CHAIN = "CNI-HOSTPORT-MASQ";
export const OLD_TOP_LEVEL_SNAT_CHAIN = "CNI-HOSTPORT-SNAT";
export const LOCALNET_GUARD_CHAIN = "CNI-HOSTPORT-LOCALNET";

/** Upstream: multiport takes at most 15 ports per rule. */
const MULTIPORT_MAX = 15;
/** iptables comments hold at most 255 characters. */
const COMMENT_MAX = 255;

/** Per-container DNAT chain: `CNI-DN-` + sha512(net+cid), 28 characters. */
export function dnatChainName(network: string, containerID: string): string {
  return formatChainNameWithPrefix("DN-", network, containerID);
}

/** Legacy per-container SNAT chain (removed on DEL when an old plugin left it). */
export function oldSnatChainName(network: string, containerID: string): string {
  return formatChainNameWithPrefix("SN-", network, containerID);
}

/** Upstream trimComment: longer than 255 → first 253 characters + "...". */
export function trimComment(s: string): string {
  return s.length > COMMENT_MAX ? `${s.slice(0, COMMENT_MAX - 2)}...` : s;
}

/** The entry-rule comment naming the owner. */
export function dnatComment(network: string, containerID: string): string {
  return trimComment(`dnat name: "${network}" id: "${containerID}"`);
}

/** Parses a `dnat name: "<net>" id: "<cid>"` comment. */
export function parseDnatComment(comment: string): { network: string; containerID: string } | undefined {
  const m = /^dnat name: "(.*)" id: "(.*)"$/s.exec(comment);
  return m ? { network: m[1]!, containerID: m[2]! } : undefined;
}

function markDef(bit: number): string {
  const v = (2 ** bit).toString(16);
  return `0x${v}/0x${v}`;
}

export function setMarkRule(bit: number): IptRule {
  return [...commentMatch("CNI portfwd masquerade mark"), "-j", "MARK", "--set-xmark", markDef(bit)];
}

export function markMasqRule(bit: number): IptRule {
  return ["-m", "mark", "--mark", markDef(bit), "-j", "MASQUERADE"];
}

export const MASQ_ENTRY_RULE: IptRule = [...commentMatch("CNI portfwd requiring masquerade"), "-j", MARK_MASQ_CHAIN];
export const TOP_LEVEL_ENTRY_RULE: IptRule = ["-m", "addrtype", "--dst-type", "LOCAL", "-j", TOP_LEVEL_DNAT_CHAIN];
export const GUARD_ENTRY_RULE: IptRule = [...commentMatch("CNI portfwd localnet guard"), "-j", LOCALNET_GUARD_CHAIN];
export const GUARD_RULE: IptRule = [
  "!", "-s", "127.0.0.0/8", "-d", "127.0.0.0/8",
  ...commentMatch("CNI portfwd: drop non-loopback traffic to 127.0.0.0/8 (route_localnet guard)"),
  "-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED,DNAT", "-j", "DROP",
];

/**
 * Moves leading address/interface matches of iptables `conditions` (`[!] -s|-d|-i|-o X`) to the
 * front as iptables-save prints them; everything else keeps its place after the multiport match.
 */
export function splitConditions(conditions: readonly string[]): { front: string[]; rest: string[] } {
  const slots: Record<string, string[]> = { "-s": [], "-d": [], "-i": [], "-o": [] };
  const rest: string[] = [];
  for (let i = 0; i < conditions.length; i++) {
    const neg = conditions[i] === "!";
    const opt = neg ? conditions[i + 1] : conditions[i];
    const norm = opt === "--source" ? "-s" : opt === "--destination" ? "-d" : opt === "--in-interface" ? "-i" : opt === "--out-interface" ? "-o" : opt;
    if (norm !== undefined && norm in slots) {
      const val = conditions[i + (neg ? 2 : 1)];
      if (val !== undefined) {
        slots[norm]!.push(...(neg ? ["!", norm, val] : [norm, val]));
        i += neg ? 2 : 1;
        continue;
      }
    }
    rest.push(conditions[i]!);
  }
  return { front: [...slots["-s"]!, ...slots["-d"]!, ...slots["-i"]!, ...slots["-o"]!], rest };
}

/** Entry rules into the container chain, one per protocol (sorted) and chunk of ≤15 host ports. */
export function dnatEntryRules(conf: PortmapConfig, containerID: string, family: IPFamily): IptRule[] {
  const chain = dnatChainName(conf.name, containerID);
  const comment = dnatComment(conf.name, containerID);
  const byProto = new Map<string, number[]>();
  // Upstream lists every host port of a protocol, whatever the family of its hostIP.
  for (const m of conf.mappings) byProto.set(m.protocol, [...(byProto.get(m.protocol) ?? []), m.hostPort]);
  const conditions = (family === 6 ? conf.conditionsV6 : conf.conditionsV4) ?? [];
  const { front, rest } = splitConditions(conditions);
  const out: IptRule[] = [];
  for (const proto of [...byProto.keys()].sort()) {
    const ports = byProto.get(proto)!;
    for (let i = 0; i < ports.length; i += MULTIPORT_MAX) {
      const list = ports.slice(i, i + MULTIPORT_MAX).join(",");
      out.push([...front, "-p", proto, ...commentMatch(comment), "-m", "multiport", "--dports", list, ...rest, "-j", chain]);
    }
  }
  return out;
}

function matchBase(m: PortMapping, family: IPFamily, src: string | undefined): string[] {
  const out: string[] = [];
  if (src !== undefined) out.push("-s", src);
  if (hasHostDst(m)) out.push("-d", `${hostText(m)}/${bitLength(family)}`);
  out.push("-p", m.protocol, "-m", m.protocol, "--dport", String(m.hostPort));
  return out;
}

/** `ip:port`, or `[ip]:port` for IPv6. */
export function ipPort(ip: CIDR, port: number): string {
  return ip.ip.family === 6 ? `[${formatIP(ip.ip)}]:${port}` : `${formatIP(ip.ip)}:${port}`;
}

/** The rules of the per-container chain for one container address, in order. */
export function dnatChainRules(conf: PortmapConfig, container: CIDR): IptRule[] {
  const family = container.ip.family;
  const setMark = conf.externalSetMarkChain ?? SETMARK_CHAIN;
  const containerNet = `${formatIP(networkAddress(container.ip, container.prefixLen))}/${container.prefixLen}`;
  const out: IptRule[] = [];
  for (const m of mappingsForFamily(conf.mappings, family)) {
    if (conf.snat) {
      // masqAll: -s 0.0.0.0/0 (::/0), which iptables stores as no -s at all.
      out.push([...matchBase(m, family, conf.masqAll ? undefined : containerNet), "-j", setMark]);
      if (family === 4 && !conf.masqAll) out.push([...matchBase(m, family, "127.0.0.1/32"), "-j", setMark]);
    }
    out.push([...matchBase(m, family, undefined), "-j", "DNAT", "--to-destination", ipPort(container, m.containerPort)]);
  }
  return out;
}

/** What a CNI-HOSTPORT-DNAT entry rule (`-p P … --dports N,M … -j CNI-DN-…`) sends on; undefined when it does not read so. */
export function parseDnatEntry(rule: readonly string[]): { protocol: string; ports: number[] } | undefined {
  const p = rule.indexOf("-p");
  const d = rule.indexOf("--dports");
  if (p < 0 || d < 0 || rule[p - 1] === "!" || rule[d - 1] === "!") return undefined;
  const ports = (rule[d + 1] ?? "").split(",").map((x) => Number.parseInt(x, 10));
  return ports.every((n) => n > 0) ? { protocol: rule[p + 1] ?? "", ports } : undefined;
}

/** Reads a saved `… -p P … --dport N … -j DNAT …` rule; undefined for other rules. */
export function parseDnatRule(rule: readonly string[]): ForwardedPort | undefined {
  let protocol = "";
  let hostPort = 0;
  let hostIP = "";
  let dnat = false;
  for (let i = 0; i < rule.length; i++) {
    const a = rule[i];
    const v = rule[i + 1] ?? "";
    if (a === "!" ) return undefined;
    if (a === "-p") protocol = v;
    else if (a === "--dport") hostPort = Number.parseInt(v, 10);
    else if (a === "-d") hostIP = v.replace(/\/(32|128)$/, "");
    else if (a === "-j" && v === "DNAT") dnat = true;
  }
  return dnat && protocol !== "" && hostPort > 0 ? { protocol, hostPort, hostIP } : undefined;
}
