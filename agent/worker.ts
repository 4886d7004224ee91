/**
 * The entry of an agent worker thread (a separate entry point of the compiled executable, see the
 * Makefile): the call loop (worker-loop.ts) over the same dispatch a plugin process runs,
 * build/dispatch.ts `routeOf` + `runPluginCall`. Every plugin's code is loaded once per thread,
 * before the thread says it is ready.
 */
import { routeOf, runPluginCall } from "../build/dispatch.ts";
import { PLUGINS } from "../build/registry.ts";
import { serveCalls } from "./worker-loop.ts";

declare const self: Worker;

function route(argv: readonly string[]) {
  const argv0 = argv[0] ?? "";
  return routeOf(argv0.slice(argv0.lastIndexOf("/") + 1), argv.slice(1));
}

serveCalls(
  (argv, io) => {
    const r = route(argv);
    if (r.kind !== "plugin") throw new Error(`not a plugin call: ${argv[0] ?? ""}`);
    return runPluginCall(r, io);
  },
  (argv) => {
    const r = route(argv);
    return r.kind === "plugin" ? r.entry.versions : [];
  },
  self,
);
await Promise.all(Object.values(PLUGINS).map((p) => p.load()));
self.postMessage({ t: "ready" });
