/**
 * The report socket: how calls the agent did not serve are counted and traced all the same
 * (docs/observability.md, "Calls the agent did not serve"). A standalone plugin process (its shim
 * was refused, no agent answered, or it was started directly) sends one datagram per invocation
 * (cli/standalone-telemetry.ts) to a unix datagram socket next to the agent's socket
 * (socket-paths.ts); the agent reads them without blocking a few times a second and
 * records them as it records the calls it serves.
 *
 * Sending never waits and never fails a call: no agent, a full buffer or a message too large each
 * drop the report. The socket is the agent's user's only (mode 0600), as the agent's socket is
 * root's; a report is checked field by field (shared/telemetry/report.ts) and names a plugin of
 * this build, so a sender cannot grow the metrics without bound.
 */
import { bindDatagram, receiveDatagram } from "../shared/sys/datagram.ts";
import { close } from "../shared/sys/libc.ts";
import { unlinkIfExists } from "../shared/sys/file.ts";
import { listenPrivately } from "../shared/sys/socket-file.ts";
import { decodeCallReport, REPORT_LIMITS, type CallReport } from "../shared/telemetry/report.ts";
import { reportSocketPath } from "./socket-paths.ts";

/** How often the agent reads the reports waiting. */
const DRAIN_EVERY_MS = 100;
/** The socket's receive buffer: some thousands of reports (a burst of standalone calls). */
const RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;

/** What the receiver does with what it reads. */
export interface ReportHandlers {
  /** A valid report. */
  report(r: CallReport): void;
  /** A datagram that is not a report (why, for a log line). */
  invalid(why: string): void;
}

/** The agent's end: bound at start, read every DRAIN_EVERY_MS, removed at close. */
export class ReportReceiver {
  readonly #path: string;
  readonly #fd: number;
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #buf = new Uint8Array(REPORT_LIMITS.bytes + 1);

  private constructor(path: string, fd: number, handlers: ReportHandlers) {
    this.#path = path;
    this.#fd = fd;
    this.#timer = setInterval(() => this.#drain(handlers), DRAIN_EVERY_MS);
    this.#timer.unref?.();
  }

  /**
   * Binds the socket for the agent at `agentSocket` as every socket of the agent is made
   * (shared/sys/socket-file.ts listenPrivately: a private directory, born 0600, a stale socket
   * file left by an earlier agent replaced, anything else refused).
   */
  static async open(agentSocket: string, handlers: ReportHandlers, log: (line: string) => void): Promise<ReportReceiver> {
    const path = reportSocketPath(agentSocket);
    const fd = await listenPrivately(path, () => bindDatagram(path, RECEIVE_BUFFER_BYTES), log);
    return new ReportReceiver(path, fd, handlers);
  }

  #drain(handlers: ReportHandlers): void {
    const decoder = new TextDecoder();
    for (;;) {
      let n: number;
      try {
        n = receiveDatagram(this.#fd, this.#buf);
      } catch {
        return;
      }
      if (n < 0) return;
      if (n > REPORT_LIMITS.bytes) {
        handlers.invalid("too large");
        continue;
      }
      let r: CallReport;
      try {
        r = decodeCallReport(decoder.decode(this.#buf.subarray(0, n)));
      } catch (err) {
        handlers.invalid((err as Error).message);
        continue;
      }
      handlers.report(r);
    }
  }

  /** Stops reading and removes the socket file. */
  close(): void {
    clearInterval(this.#timer);
    close(this.#fd);
    unlinkIfExists(this.#path);
  }
}
