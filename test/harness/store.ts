/** Read-only views of a host-local store directory (`<dataDir>/<network>/`) for assertions. */
import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface StoreFile {
  name: string;
  content: string;
  /** Permission bits, e.g. 0o600. */
  mode: number;
}

/**
 * Every regular file in the network directory (recursively, relative names), sorted by name. Files
 * whose name starts with "." are left out unless `hidden` is set: that is where our host-local keeps
 * its private owner index, which the Go plugin never matches (it compares file contents with IDs).
 */
export function readStoreDir(networkDir: string, opts: { hidden?: boolean } = {}): StoreFile[] {
  if (!existsSync(networkDir)) return [];
  const out: StoreFile[] = [];
  const walk = (dir: string, prefix: string): void => {
    for (const entry of readdirSync(dir)) {
      if (!opts.hidden && entry.startsWith(".")) continue;
      const full = join(dir, entry);
      const st = lstatSync(full);
      if (st.isDirectory()) walk(full, `${prefix}${entry}/`);
      else if (st.isFile()) out.push({ name: `${prefix}${entry}`, content: readFileSync(full, "utf8"), mode: st.mode & 0o777 });
    }
  };
  walk(networkDir, "");
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The reservation files only (not `lock`, not `last_reserved_ip.*`): ip → file content. */
export function reservations(networkDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of readStoreDir(networkDir)) {
    if (f.name === "lock" || f.name.startsWith("last_reserved_ip.")) continue;
    out[f.name] = f.content;
  }
  return out;
}

/** The `id\r\nifname` content a reservation file must hold. */
export function reservationContent(containerID: string, ifName: string): string {
  return `${containerID}\r\n${ifName}`;
}
