/** The human-readable form of a reload pass (pass.ts). */
import type { AttachmentOutcome, ReloadReport } from "./pass.ts";

function attachmentLines(a: AttachmentOutcome): string {
  const who = `network ${JSON.stringify(a.network)} ${a.containerID}/${a.ifName}`;
  if (a.state === "skipped") return `${who}: skipped: ${a.why}\n`;
  let out = `${who}: ${a.state} (${a.why})\n`;
  for (const p of a.parts) {
    const detail = [p.error, p.problems.length > 0 ? (p.state === "failed" ? `missing: ${p.problems.join("; ")}` : p.problems.join("; ")) : undefined].filter((x) => x !== undefined && x !== "");
    out += `    ${p.state.padEnd(14)}${p.what}${detail.length > 0 ? `: ${detail.join("; ")}` : ""}\n`;
  }
  for (const n of a.notes) out += `    note: ${n}\n`;
  return out;
}

/** Counts of the attachments' states, e.g. `3 attachment(s): 2 ok, 1 restored, 0 failed, 0 skipped`. */
export function reloadSummary(r: ReloadReport): string {
  const n = (s: string): number => r.attachments.filter((a) => a.state === s).length;
  const changed = r.dryRun ? `${n("would restore")} to restore` : `${n("restored")} restored`;
  return `${r.attachments.length} attachment(s): ${n("ok")} ok, ${changed}, ${n("failed")} failed, ${n("skipped")} skipped`;
}

/**
 * The report: every attachment (`changesOnly`: only those restored, to restore or failed — what
 * a watcher prints after a pass), the cache files that could not be used, and the summary.
 */
export function formatReloadReport(r: ReloadReport, opts: { changesOnly?: boolean; heading?: string } = {}): string {
  let out = "";
  for (const p of r.problems) out += `note: ${p}\n`;
  for (const a of r.attachments) {
    if (opts.changesOnly && (a.state === "ok" || a.state === "skipped")) continue;
    out += attachmentLines(a);
  }
  if (!opts.changesOnly && r.attachments.length === 0) out += `no attachments in ${r.cacheDir}/results\n`;
  out += `reload${r.dryRun ? " (dry run)" : ""}${opts.heading ? ` (${opts.heading})` : ""}: ${reloadSummary(r)}\n`;
  return out;
}
