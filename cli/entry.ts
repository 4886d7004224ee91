/**
 * The only compile entry of the multi-call executable, in two stages. This module answers VERSION
 * (skel's answer, which needs no other variable) from answers inlined at build time
 * (version-answers.ts, a bundle-time macro), so that call loads no other module, no plugin code,
 * libc or node:fs, and costs what a Bun hello-world costs. Every other call goes to dispatch.ts.
 *
 * The name the process was invoked by is the last path component of `process.argv0` (hard links
 * and symlinks both keep it; `argv[0]` may be rewritten by the runtime); when that says nothing
 * ("" or "bun"), dispatch.ts reads /proc/self/cmdline.
 */
import { versionAnswers } from "./version-answers.ts" with { type: "macro" };

const VERSION_ANSWERS: Readonly<Record<string, string>> = versionAnswers();

/** The last component of a path ("" for none); string methods only, no regular expression. */
function lastComponent(path: string): string {
  let end = path.length;
  while (end > 0 && path[end - 1] === "/") end--;
  return path.slice(path.lastIndexOf("/", end - 1) + 1, end);
}

const name = process.argv0 ? lastComponent(process.argv0) : "";
const daemon = name === "dhcp" && process.argv[2] === "daemon";
if (!daemon && process.env.CNI_COMMAND === "VERSION" && Object.hasOwn(VERSION_ANSWERS, name)) {
  // console.log writes synchronously and completely in Bun, also to an O_NONBLOCK pipe, and
  // supplies the answer's final newline.
  console.log(VERSION_ANSWERS[name]);
  process.exit(0);
} else {
  (await import("./dispatch.ts")).run(name);
}
