/**
 * Persisted leases (ours; upstream keeps leases in memory only): one JSON file per lease under the
 * lease directory (default /var/lib/cni/dhcp), named by a hash of the lease key (plus `#v6` for a
 * DHCPv6 lease),
 * written atomically (temp file + rename), mode 0600. The daemon's thread owns the directory, so
 * synchronous fs calls are fine here (never called while switched into a netns).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface LeaseRecord {
  /** `<containerID>/<network>/<ifname>`. */
  key: string;
  /** 6 for a DHCPv6 lease; absent for DHCPv4. */
  family?: 6;
  containerID: string;
  /** Netns path as the plugin sent it (absolute; without the daemon's host prefix). */
  netns: string;
  ifName: string;
  /** CNI_ARGS of the ADD (for `provide[].fromArg` on renewals). */
  cniArgs: string;
  /** The network config of the ADD. */
  stdinData: string;
  /** The last DHCPACK (v4) or REPLY (v6), base64. */
  ack: string;
  /** When that ACK arrived (epoch ms). */
  boundAt: number;
}

export class LeaseStore {
  readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }

  #file(key: string, family: 4 | 6): string {
    const slot = family === 6 ? `${key}#v6` : key;
    return join(this.dir, `${createHash("sha256").update(slot).digest("hex").slice(0, 32)}.json`);
  }

  save(r: LeaseRecord): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const file = this.#file(r.key, r.family ?? 4);
    const tmp = `${file}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(r)}\n`, { mode: 0o600 });
    renameSync(tmp, file);
  }

  remove(key: string, family: 4 | 6): void {
    rmSync(this.#file(key, family), { force: true });
  }

  /** Every readable record; unreadable files are reported through `onBad` and skipped. */
  loadAll(onBad: (file: string, why: string) => void): LeaseRecord[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: LeaseRecord[] = [];
    for (const name of names.filter((n) => n.endsWith(".json")).sort()) {
      const file = join(this.dir, name);
      try {
        const r = JSON.parse(readFileSync(file, "utf8")) as LeaseRecord;
        if (typeof r.key !== "string" || typeof r.ack !== "string" || typeof r.boundAt !== "number") throw new Error("missing fields");
        out.push(r);
      } catch (err) {
        onBad(file, (err as Error).message);
      }
    }
    return out;
  }
}
