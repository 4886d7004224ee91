/**
 * The dhcp plugin's lease daemon (ipam/dhcp/daemon), which `dhcp daemon` (cli/dispatch.ts) and the agent's `--dhcp`
 * host: its entry and its flags, loaded only by them.
 */
export const dhcpDaemon = {
  load: () => import("../ipam/dhcp/daemon/main.ts"),
  flags: () => import("../ipam/dhcp/daemon/flags.ts"),
};
