/**
 * The entry of an agent worker thread (a separate entry point of the compiled executable, see the
 * Makefile): the call loop (worker-loop.ts) over the function a plugin process runs its call with,
 * registry/registry.ts `runPluginCall`. Every plugin's code is loaded once per thread, before the thread
 * says it is ready.
 */
import { PLUGINS, pluginEntry, runPluginCall } from "../registry/registry.ts";
import { serveCalls } from "./worker-loop.ts";

declare const self: Worker;

serveCalls(runPluginCall, (plugin) => pluginEntry(plugin)?.versions ?? [], self);
await Promise.all(Object.values(PLUGINS).map((p) => p.load()));
self.postMessage({ t: "ready" });
