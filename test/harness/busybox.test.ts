import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { staticBusybox } from "./busybox.ts";
import { useFixtureCleanup } from "./cleanup.ts";
import { REPO_ROOT } from "./paths.ts";
import { makeTempDir } from "./tempdir.ts";

const SCRIPT = join(import.meta.dir, "static-busybox.sh");
/** A dynamically linked executable, as Debian's `busybox` package installs at /bin/busybox. */
const DYNAMIC = "/usr/bin/env";

function pick(candidate: string, cache: string): { status: number | null; path: string; why: string } {
  const r = Bun.spawnSync(["bash", SCRIPT, "--offline"], {
    env: { PATH: process.env.PATH ?? "", CNI_BUSYBOX_CANDIDATE: candidate, CNI_BUSYBOX_CACHE: cache },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { status: r.exitCode, path: r.stdout.toString().trim(), why: r.stderr.toString() };
}

/** A cache directory holding `binary` as its busybox. */
function cacheWith(binary: string): string {
  const cache = makeTempDir("cni-busybox-cache-");
  mkdirSync(join(cache, "bin"));
  copyFileSync(binary, join(cache, "bin", "busybox"));
  return cache;
}

describe("static-busybox.sh: busybox-static's binary, whatever /bin/busybox is", () => {
  useFixtureCleanup();

  test("a dynamically linked /bin/busybox is refused", () => {
    const r = pick(DYNAMIC, makeTempDir("cni-busybox-cache-"));
    expect(r.status).toBe(1);
    expect(r.path).toBe("");
    expect(r.why).toContain(`${DYNAMIC} is not a statically linked executable`);
  });

  test("a poisoned cache (a dynamic binary where the static one belongs) is never used", () => {
    const r = pick(DYNAMIC, cacheWith(DYNAMIC));
    expect(r.status).toBe(1);
    expect(r.path).toBe("");
  });

  test("with a dynamic /bin/busybox, the cached busybox-static is used; a static one is used as is", () => {
    const bb = staticBusybox();
    const cache = cacheWith(bb);
    expect(pick(DYNAMIC, cache)).toMatchObject({ status: 0, path: join(cache, "bin", "busybox") });
    expect(pick(bb, makeTempDir("cni-busybox-cache-"))).toMatchObject({ status: 0, path: bb });
  });

  test("no test copies or runs the host's busybox directly (only through static-busybox.sh)", () => {
    const direct = [
      /cp\s+\/bin\/busybox/, // shell: an image or initramfs made from whatever /bin/busybox is
      /\[ -x \/bin\/busybox \]/, // shell: "some busybox exists" is not "a static busybox exists"
      /["']\/bin\/busybox["']/, // TS: the host's path as an argument
      /["'](--|nsenter|ip)["'],\s*["']busybox["']/, // TS: busybox looked up in PATH
    ];
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (/\.(ts|sh)$/.test(name) && p !== SCRIPT && p !== import.meta.path) {
          const text = readFileSync(p, "utf8");
          for (const re of direct) if (re.test(text)) offenders.push(`${relative(REPO_ROOT, p)}: ${re.source}`);
        }
      }
    };
    walk(join(REPO_ROOT, "test"));
    expect(offenders).toEqual([]);
  });
});
