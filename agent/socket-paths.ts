/**
 * Where the agent listens: its socket (`--socket`; the shims read CNI_PLUGINS_SOCKET) and, next
 * to it, the report socket plugin processes send the reports of calls they run standalone to
 * (report-socket.ts). A module of its own: every plugin process reads it.
 */

export const DEFAULT_SOCKET = "/run/cni/plugins.sock";

/** The report socket of the agent listening at `agentSocket`: `/run/cni/plugins.sock` → `/run/cni/plugins.reports.sock`. */
export function reportSocketPath(agentSocket: string): string {
  return agentSocket.endsWith(".sock") ? `${agentSocket.slice(0, -".sock".length)}.reports.sock` : `${agentSocket}.reports`;
}
