/**
 * The shapes of a result in each spec version's wire form, as the version modules (v020.ts,
 * v040.ts, v100.ts) read, write and convert them: types alone, so that one version's module names
 * another's shape without loading it.
 */
import type { DNS, Result, Route } from "../types.ts";

// Spec 0.1.0 / 0.2.0.
export interface V020IPConfig {
  /** CIDR with host bits. */
  ip: string;
  gateway?: string;
  routes?: Route[];
}

export interface ResultV020 {
  cniVersion: string;
  ip4?: V020IPConfig;
  ip6?: V020IPConfig;
  dns?: DNS;
}

// Spec 0.3.0 / 0.3.1 / 0.4.0.
export interface V040Interface {
  name: string;
  mac?: string;
  sandbox?: string;
}

export interface V040IPConfig {
  /** "4" or "6" (a parsed prevResult may carry anything; it is re-derived on conversion to 1.x and back). */
  version: string;
  interface?: number;
  address: string;
  gateway?: string;
}

export interface ResultV040 {
  cniVersion: string;
  interfaces?: V040Interface[];
  ips?: V040IPConfig[];
  routes?: Route[];
  dns?: DNS;
}

// Spec 1.x.
/** A 1.x result with its version label. */
export interface ResultV100 extends Result {
  cniVersion: string;
}
