/**
 * Sysctls of the test's "host": the throwaway network namespace the integration lane runs in
 * (test/run.ts). That namespace, like every new one, starts with ip_forward and the IPv4 `all` /
 * `default` settings copied from the real host's (net.core.devconf_inherit_init_net = 0), so a test
 * sets what it relies on here instead of inheriting it, and puts the old value back.
 */
import { afterAll, beforeAll } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";

/** `net.ipv4.ip_forward` or `net/ipv4/conf/eth0.1/forwarding` (slashes keep dots in names). */
function procPath(key: string): string {
  return `/proc/sys/${key.includes("/") ? key : key.replaceAll(".", "/")}`;
}

/** The value of `key` in the test's netns. */
export function hostSysctl(key: string): string {
  return readFileSync(procPath(key), "utf8").trim();
}

/** Writes `key` in the test's netns; returns the value it had. */
export function setHostSysctl(key: string, value: string): string {
  const old = hostSysctl(key);
  writeFileSync(procPath(key), value);
  return old;
}

/** For one describe block: sets `values` before its tests, restores the old values after them. */
export function useHostSysctls(values: Readonly<Record<string, string>>): void {
  const saved: [string, string][] = [];
  beforeAll(() => {
    for (const [key, value] of Object.entries(values)) saved.push([key, setHostSysctl(key, value)]);
  });
  afterAll(() => {
    for (const [key, value] of saved.reverse()) setHostSysctl(key, value);
    saved.length = 0;
  });
}
