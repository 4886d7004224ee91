/**
 * The busybox every test runs or copies into an image: a statically linked one from Debian's
 * busybox-static package, whatever /bin/busybox is on this host (static-busybox.sh next to this
 * file picks it, or unpacks busybox-static into a cache). Tests run in netns without network, so
 * they never download: test/setup-host.sh fills the cache when the host needs it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

const SCRIPT = join(import.meta.dir, "static-busybox.sh");

let found: string | undefined;

/** Path of the static busybox; throws with static-busybox.sh's reason when there is none. */
export function staticBusybox(): string {
  if (found !== undefined) return found;
  const r = Bun.spawnSync(["bash", SCRIPT, "--offline"], { stdout: "pipe", stderr: "pipe" });
  const path = r.stdout.toString().trim();
  if (r.exitCode !== 0 || path === "") throw new Error(`no static busybox: ${r.stderr.toString().trim()}`);
  found = path;
  return path;
}

/** 16 hex digits of the static busybox's SHA-256: the key of images and caches built from it. */
export function staticBusyboxTag(): string {
  return new Bun.CryptoHasher("sha256").update(readFileSync(staticBusybox())).digest("hex").slice(0, 16);
}
