/** resolvConf parsing (upstream dns_test.go scenarios plus the observed 1.1.1 behaviour). */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CniError } from "../cni/errors.ts";
import { parseResolvConf, parseResolvConfText } from "./dns.ts";

const dir = mkdtempSync(join(tmpdir(), "hl-dns-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("parseResolvConf", () => {
  test("parseResolvConf parses a simple resolv.conf", () => {
    expect(parseResolvConfText("nameserver 10.0.0.1\n")).toEqual({ nameservers: ["10.0.0.1"] });
  });

  test("parseResolvConf ignores comments, blank lines and lines without an argument", () => {
    const text = "# nameserver 1.1.1.1\n; nameserver 2.2.2.2\n\n   \nnameserver\n  nameserver 10.0.0.1  # inline\n";
    expect(parseResolvConfText(text)).toEqual({ nameservers: ["10.0.0.1"] });
  });

  test("parseResolvConf parses all fields: accumulates search/options, last domain wins", () => {
    const text = [
      "nameserver 10.0.0.1",
      "nameserver 10.0.0.2 extra",
      "domain first.example",
      "search a.example b.example",
      "search c.example",
      "domain example.com",
      "options ndots:5 debug",
      "sortlist 130.155.160.0/255.255.240.0",
      "unknown x",
      "\tnameserver\t10.0.0.3\r",
    ].join("\n");
    expect(parseResolvConfText(text)).toEqual({
      nameservers: ["10.0.0.1", "10.0.0.2", "10.0.0.3"],
      domain: "example.com",
      search: ["a.example", "b.example", "c.example"],
      options: ["ndots:5", "debug"],
    });
  });

  test("parseResolvConf reads a file and fails like Go on a missing one", () => {
    const path = join(dir, "resolv.conf");
    writeFileSync(path, "nameserver 192.0.2.53\nsearch example.org\n");
    expect(parseResolvConf(path)).toEqual({ nameservers: ["192.0.2.53"], search: ["example.org"] });
    const missing = join(dir, "nope");
    expect(() => parseResolvConf(missing)).toThrow(`open ${missing}: no such file or directory`);
    try {
      parseResolvConf(missing);
    } catch (err) {
      expect((err as CniError).code).toBe(999);
    }
  });
});
