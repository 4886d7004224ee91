/**
 * What the node holds for one network, as `cni-plugins inspect` and `gc` collect it: the
 * attachments seen in each place the plugins leave state, and what each holds there. The places
 * are read by the operator (the runtimes' cache, firewall rules) and by each plugin that keeps state
 * of its own ({@link StateSource} of ownership.ts).
 */

/** A network configuration list, as the runtimes' configuration directory holds it. */
export interface NetworkConfigList {
  name: string;
  cniVersion: string;
  /** Each plugin's own object, as in the file. */
  plugins: Record<string, unknown>[];
}

/** One thing the node holds for an attachment. */
export interface Holding {
  /** The place: "cache", "iptables", "nftables", or the CNI type of the plugin that keeps it. */
  kind: string;
  /** Where it is: a file, a rule, a device. */
  what: string;
}

/** An attachment as the node's state shows it. */
export interface SeenAttachment {
  containerID: string;
  /** "" when the source does not record the interface (e.g. a legacy one-line reservation). */
  ifName: string;
  holdings: Holding[];
  /** Addresses the attachment holds (reservations, cached result, lease). */
  addresses: Set<string>;
  /** Netns paths recorded for it (cache entry, dhcp lease). */
  netns: Set<string>;
  /** True when a libcni cache entry exists. */
  cached: boolean;
}

/** Collects the attachments of one network. */
export class NetworkState {
  readonly attachments = new Map<string, SeenAttachment>();
  readonly problems: string[] = [];
  readonly network: NetworkConfigList;
  constructor(network: NetworkConfigList) {
    this.network = network;
  }

  /** The attachment (created on first sight). */
  attachment(containerID: string, ifName: string): SeenAttachment {
    const key = `${containerID}\n${ifName}`;
    let a = this.attachments.get(key);
    if (a === undefined) {
      a = { containerID, ifName, holdings: [], addresses: new Set(), netns: new Set(), cached: false };
      this.attachments.set(key, a);
    }
    return a;
  }

  /** Attachments of a container (all interfaces). */
  ofContainer(containerID: string): SeenAttachment[] {
    return [...this.attachments.values()].filter((a) => a.containerID === containerID);
  }

  /** Runs one source; a failure is a problem of this network's report. */
  read(source: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.problems.push(`${source}: ${(err as Error).message}`);
    }
  }

  /** {@link read} for a source that answers later. */
  async readLater(source: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.problems.push(`${source}: ${(err as Error).message}`);
    }
  }
}

/** The names in a directory; [] when it does not exist. */
export function namesIn(r: Pick<HostReaders, "readDir">, dir: string): string[] {
  try {
    return r.readDir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/** The host reads a state source makes: injectable for tests. */
export interface HostReaders {
  readDir(path: string): string[];
  readFile(path: string): string;
  /** The host's links of a kind (`ifb`, …) with their aliases. */
  links(kind: string): { name: string; alias?: string | undefined }[];
}
