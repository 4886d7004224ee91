/**
 * The networks of a configuration directory, read as libcni reads them (`libcni.ConfFiles` and
 * `LoadConfList`): `*.conflist`, `*.conf` and `*.json` in name order; a file with `plugins` is a
 * list, any other a single plugin wrapped into a list of one. When two files name the same network
 * the first one wins, as a runtime picking "the first file for this name" does.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface NetworkList {
  name: string;
  cniVersion: string;
  /** Each plugin's own object, as in the file. */
  plugins: Record<string, unknown>[];
  /** The file it came from. */
  file: string;
}

export interface LoadedNetworks {
  networks: NetworkList[];
  /** Files that could not be used, with the reason (reported, not fatal). */
  problems: string[];
}

const EXTENSIONS = [".conflist", ".conf", ".json"];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** One file's network, or the reason it has none. */
export function parseNetworkFile(file: string, text: string): NetworkList | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return `${file}: not JSON: ${(err as Error).message}`;
  }
  if (!isObject(doc)) return `${file}: not a JSON object`;
  const name = doc.name;
  if (typeof name !== "string" || name === "") return `${file}: no network name`;
  const cniVersion = typeof doc.cniVersion === "string" ? doc.cniVersion : "0.1.0";
  if ("plugins" in doc) {
    const plugins = doc.plugins;
    if (!Array.isArray(plugins) || plugins.length === 0 || !plugins.every(isObject)) return `${file}: "plugins" is not a non-empty list of objects`;
    if (!plugins.every((p) => typeof p.type === "string" && p.type !== "")) return `${file}: a plugin has no "type"`;
    return { name, cniVersion, plugins, file };
  }
  if (typeof doc.type !== "string" || doc.type === "") return `${file}: no "type" and no "plugins"`;
  return { name, cniVersion, plugins: [doc], file };
}

/** Every network of `dir` (a missing directory has none). */
export function loadNetworks(dir: string): LoadedNetworks {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => EXTENSIONS.some((e) => n.endsWith(e))).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { networks: [], problems: [`${dir}: no such directory`] };
    throw err;
  }
  const networks: NetworkList[] = [];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const n of names) {
    const file = join(dir, n);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      problems.push(`${file}: ${(err as Error).message}`);
      continue;
    }
    const net = parseNetworkFile(file, text);
    if (typeof net === "string") {
      problems.push(net);
      continue;
    }
    const first = seen.get(net.name);
    if (first !== undefined) {
      problems.push(`${file}: network ${JSON.stringify(net.name)} already defined by ${first}; ignored`);
      continue;
    }
    seen.set(net.name, file);
    networks.push(net);
  }
  return { networks, problems };
}
