/**
 * The iptables rules of the firewall plugin, byte-for-byte upstream's (HEAD; rules written in
 * iptables-save order so they compare equal to what the kernel stores), all in the `filter` table:
 *
 *   FORWARD                -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD       (inserted at 1)
 *   CNI-FORWARD            -m comment --comment "CNI firewall plugin admin overrides" -j <admin>  (inserted at 1)
 *   CNI-FORWARD            -d <ip>/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT       (appended, per address)
 *   CNI-FORWARD            -s <ip>/32 -j ACCEPT                                                    (appended, per address)
 *
 * Ingress policy (same-bridge / isolated), per bridge, Docker's two-stage isolation:
 *   FORWARD                -m comment --comment C -j CNI-ISOLATION-STAGE-1                         (inserted at 1)
 *   CNI-ISOLATION-STAGE-1  -i <br> ! -o <br> -m comment --comment C_same -j CNI-ISOLATION-STAGE-2  (inserted at 1)
 *   CNI-ISOLATION-STAGE-1  -i <br> -o <br> -m comment --comment C_isolated -j DROP                (isolated only, inserted at 1)
 *   CNI-ISOLATION-STAGE-1  -m comment --comment C -j RETURN                                       (appended)
 *   CNI-ISOLATION-STAGE-2  -o <br> -m comment --comment C -j DROP                                 (inserted at 1)
 *   CNI-ISOLATION-STAGE-2  -m comment --comment C -j RETURN                                       (appended)
 * where C = "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)".
 */
import type { IptRule } from "../../shared/firewall/iptables/chain.ts";
import { commentMatch } from "../../shared/firewall/iptables/rule.ts";
import type { IngressPolicy } from "./config.ts";

export const FILTER = "filter";
export const FORWARD = "FORWARD";
export const PRIV_CHAIN = "CNI-FORWARD";
export const STAGE1 = "CNI-ISOLATION-STAGE-1";
export const STAGE2 = "CNI-ISOLATION-STAGE-2";

export const FORWARD_COMMENT = "CNI firewall plugin rules";
export const ADMIN_COMMENT = "CNI firewall plugin admin overrides";
export const ISOLATION_COMMENT = "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)";

function policyComment(policy: "same-bridge" | "isolated"): string {
  return `CNI firewall plugin rules (ingressPolicy: ${policy})`;
}

/** FORWARD → CNI-FORWARD. */
export const forwardJump: IptRule = [...commentMatch(FORWARD_COMMENT), "-j", PRIV_CHAIN];

/** CNI-FORWARD → admin chain. */
export function adminJump(admin: string): IptRule {
  return [...commentMatch(ADMIN_COMMENT), "-j", admin];
}

/** The two per-address rules (upstream getPrivChainRules). */
export function addressRules(host: string): IptRule[] {
  return [
    ["-d", host, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"],
    ["-s", host, "-j", "ACCEPT"],
  ];
}

export interface IsolationRules {
  forwardJump: IptRule;
  /** STAGE-1 rules to insert at the top, in insertion order (the last one ends up first). */
  stage1Top: IptRule[];
  stage1Return: IptRule;
  stage2Top: IptRule;
  stage2Return: IptRule;
}

/** The isolation rules for one bridge under `policy` (same-bridge or isolated). */
export function isolationRules(policy: Exclude<IngressPolicy, "open">, bridge: string): IsolationRules {
  const top: IptRule[] = [["-i", bridge, "!", "-o", bridge, ...commentMatch(policyComment("same-bridge")), "-j", STAGE2]];
  if (policy === "isolated") top.push(["-i", bridge, "-o", bridge, ...commentMatch(policyComment("isolated")), "-j", "DROP"]);
  return {
    forwardJump: [...commentMatch(ISOLATION_COMMENT), "-j", STAGE1],
    stage1Top: top,
    stage1Return: [...commentMatch(ISOLATION_COMMENT), "-j", "RETURN"],
    stage2Top: ["-o", bridge, ...commentMatch(ISOLATION_COMMENT), "-j", "DROP"],
    stage2Return: [...commentMatch(ISOLATION_COMMENT), "-j", "RETURN"],
  };
}
