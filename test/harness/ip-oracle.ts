/**
 * The independent kernel oracle: iproute2's JSON output, run inside a namespace with
 * `nsenter --net=<path> ip -j ...`. Tests check what the plugins did with this, never only with our
 * own netlink code.
 */

export interface IpLink {
  ifindex: number;
  ifname: string;
  flags: string[];
  mtu: number;
  operstate: string;
  link_type: string;
  address?: string;
  [key: string]: unknown;
}

export interface IpAddrInfo {
  family: "inet" | "inet6";
  local: string;
  prefixlen: number;
  scope: string;
  [key: string]: unknown;
}

export interface IpAddrLink extends IpLink {
  addr_info: IpAddrInfo[];
}

export interface IpRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  scope?: string;
  metric?: number;
  table?: string;
  [key: string]: unknown;
}

/**
 * Runs `ip -j <args>` in the namespace at `netnsPath` (in our own namespace when it is undefined)
 * and parses the JSON. Throws with ip's stderr when ip fails.
 */
export function ipJson<T = unknown>(netnsPath: string | undefined, ...args: string[]): T {
  const argv = netnsPath === undefined ? ["ip", "-j", ...args] : ["nsenter", `--net=${netnsPath}`, "--", "ip", "-j", ...args];
  const run = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) {
    throw new Error(`${argv.join(" ")} failed (exit ${run.exitCode}): ${run.stderr.toString().trim()}`);
  }
  const text = run.stdout.toString().trim();
  return (text === "" ? [] : JSON.parse(text)) as T;
}

/** `ip -j link show` in the namespace. */
export function listLinks(netnsPath: string | undefined): IpLink[] {
  return ipJson<IpLink[]>(netnsPath, "link", "show");
}

/** One link by name, or undefined. */
export function findLink(netnsPath: string | undefined, name: string): IpLink | undefined {
  return listLinks(netnsPath).find((l) => l.ifname === name);
}

/** True when the link has the administrative UP flag. */
export function isUp(link: IpLink | undefined): boolean {
  return link !== undefined && link.flags.includes("UP");
}

/** `ip -j addr show` in the namespace. */
export function listAddrs(netnsPath: string | undefined): IpAddrLink[] {
  return ipJson<IpAddrLink[]>(netnsPath, "addr", "show");
}

/** The addresses of one link as `ip/prefix` strings, in kernel order. */
export function addrsOf(netnsPath: string | undefined, ifname: string): string[] {
  const link = listAddrs(netnsPath).find((l) => l.ifname === ifname);
  return (link?.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`);
}

/** `ip -j [-6] route show table <table>`; IPv4 by default. */
export function listRoutes(netnsPath: string | undefined, opts: { family?: 4 | 6; table?: string } = {}): IpRoute[] {
  const fam = opts.family === 6 ? ["-6"] : ["-4"];
  return ipJson<IpRoute[]>(netnsPath, ...fam, "route", "show", "table", opts.table ?? "main");
}
