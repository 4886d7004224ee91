/**
 * A kube-proxy-sized node for `make bench`: an iptables-restore file with kube-proxy's usual nat
 * skeleton plus 2,000 KUBE-SEP-style chains of 10 rules each (20,000 rules, every one with a
 * comment and a MARK target, as kube-proxy writes them), and the hint chain kube-proxy creates in
 * mangle (KUBE-IPTABLES-HINT) so tools can tell which iptables variant the node uses.
 */

export const KUBE_CHAINS = 2000;
export const RULES_PER_CHAIN = 10;

/** 16 upper-case base32-ish characters derived from `i`, like kube-proxy's hashed chain names. */
export function sepChainName(i: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let x = (i + 1) * 2654435761;
  let out = "";
  for (let k = 0; k < 16; k++) {
    out += alphabet[x % 32];
    x = Math.floor(x / 32) + (k + 1) * 7919 * (i + 1);
  }
  return `KUBE-SEP-${out}`;
}

/** The restore file (`iptables-restore` input; both tables, COMMIT after each). */
export function kubeProxyTables(chains = KUBE_CHAINS, rulesPerChain = RULES_PER_CHAIN): string {
  const lines = [
    "*mangle",
    ":KUBE-IPTABLES-HINT - [0:0]",
    "COMMIT",
    "*nat",
    ":PREROUTING ACCEPT [0:0]",
    ":INPUT ACCEPT [0:0]",
    ":OUTPUT ACCEPT [0:0]",
    ":POSTROUTING ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-POSTROUTING - [0:0]",
    ":KUBE-MARK-MASQ - [0:0]",
  ];
  const names = Array.from({ length: chains }, (_, i) => sepChainName(i));
  for (const n of names) lines.push(`:${n} - [0:0]`);
  lines.push(
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
    "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
    "-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0",
    '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE',
  );
  names.forEach((n, i) => {
    for (let r = 0; r < rulesPerChain; r++) {
      const ip = `10.${64 + (i >> 8)}.${i & 255}.${r + 1}`;
      lines.push(`-A ${n} -s ${ip}/32 -m comment --comment "ns-${i % 97}/svc-${i}:port-${r}" -j MARK --set-xmark 0x4000/0x4000`);
    }
  });
  lines.push("COMMIT", "");
  return lines.join("\n");
}
