import { expect, test } from "bun:test";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { useFixtureCleanup } from "../test/harness/cleanup.ts";
import { makeTempDir } from "../test/harness/tempdir.ts";
import { sendDatagram } from "../shared/sys/datagram.ts";
import type { CallReport } from "../shared/telemetry/report.ts";
import { reportSocketPath } from "./socket-paths.ts";
import { ReportReceiver } from "./report-socket.ts";

/** What a plugin process sends (cli/standalone-telemetry.ts). */
function sendCallReport(socket: string, r: CallReport): boolean {
  return sendDatagram(reportSocketPath(socket), Buffer.from(JSON.stringify(r)));
}

useFixtureCleanup();

function socketIn(): string {
  return join(makeTempDir("cni-reports-"), "plugins.sock");
}

const REPORT: CallReport = { plugin: "loopback", command: "ADD", code: 0, durationS: 0.001, phases: [["link", 0.0002]], ipam: [] };

test("the report socket is named after the agent's", () => {
  expect(reportSocketPath("/run/cni/plugins.sock")).toBe("/run/cni/plugins.reports.sock");
  expect(reportSocketPath("/tmp/agent")).toBe("/tmp/agent.reports");
});

test("reports sent are received; invalid datagrams are counted as such; the socket is the agent's only", async () => {
  const socket = socketIn();
  const got: CallReport[] = [];
  const invalid: string[] = [];
  const receiver = await ReportReceiver.open(socket, { report: (r) => got.push(r), invalid: (why) => invalid.push(why) }, () => {});
  try {
    expect(statSync(reportSocketPath(socket)).mode & 0o777).toBe(0o600);
    expect(sendCallReport(socket, REPORT)).toBe(true);
    expect(sendCallReport(socket, { ...REPORT, code: 7 })).toBe(true);
    expect(sendDatagram(reportSocketPath(socket), Buffer.from('{"plugin":"x"}'))).toBe(true);
    const deadline = Date.now() + 2000;
    while (got.length + invalid.length < 3 && Date.now() < deadline) await Bun.sleep(20);
    expect(got).toEqual([REPORT, { ...REPORT, code: 7 }]);
    expect(invalid).toEqual(["command"]);
  } finally {
    receiver.close();
  }
  expect(existsSync(reportSocketPath(socket))).toBe(false);
});

test("with no agent a report is dropped at once", () => {
  const socket = socketIn();
  const started = performance.now();
  expect(sendCallReport(socket, REPORT)).toBe(false);
  expect(performance.now() - started).toBeLessThan(50);
});

test("a stale socket file of an earlier agent is replaced; another file is not", async () => {
  const socket = socketIn();
  const none = { report: () => {}, invalid: () => {} };
  await ReportReceiver.open(socket, none, () => {});
  // The first receiver is gone without close (as across a restart's execve): its file stays.
  const again = await ReportReceiver.open(socket, none, () => {});
  again.close();
  writeFileSync(reportSocketPath(socket), "not a socket");
  await expect(ReportReceiver.open(socket, none, () => {})).rejects.toThrow("is not a socket");
});
