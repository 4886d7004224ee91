/** What the package tests (test/e2e/deb*.test.ts) read from a .deb. */
import { run } from "./tools.ts";

/** The paths a .deb installs (files and links, not directories). */
export async function debFiles(deb: string): Promise<string[]> {
  const listing = (await run(["dpkg-deb", "-c", deb])).stdout.trim().split("\n");
  return listing.filter((l) => !l.startsWith("d")).map((l) => l.split(/\s+/)[5]!.replace(/^\./, ""));
}
