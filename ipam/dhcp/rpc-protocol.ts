/**
 * The plugin ↔ daemon protocol: Go's net/rpc over HTTP on the unix socket, exactly as upstream's
 * plugin and daemon speak it (plugins/ipam/dhcp/main.go `rpc.DialHTTP`, daemon.go
 * `rpc.HandleHTTP`), so either half can be the Go 1.1.1/HEAD binary.
 *
 * 1. The client writes `CONNECT /_goRPC_ HTTP/1.0\n\n`; the server answers
 *    `HTTP/1.0 200 Connected to Go RPC\n\n`.
 * 2. Then each side writes one gob stream (gob.ts): a call is a `rpc.Request{ServiceMethod, Seq}`
 *    followed by its argument, an answer a `rpc.Response{ServiceMethod, Seq, Error}` followed by
 *    the reply (an empty struct when `Error` is set). Several calls may share a connection.
 *
 * Methods (argument: skel.CmdArgs, with the network config in `StdinData`):
 * - `DHCP.Allocate` → current.Result (upstream): acquire, or return the held lease.
 * - `DHCP.Release` → struct{} (upstream): release and forget the lease.
 * - `DHCP.Check` → current.Result (ours): the held lease, read-only; nothing is sent to the server.
 * - `DHCP.GC` → struct{} (ours): release the network's leases whose attachment is not in the
 *   config's `cni.dev/valid-attachments`.
 * A Go daemon answers our methods with `rpc: can't find method DHCP.Check`: the plugin falls back
 * to upstream's behaviour then (dhcp.ts). Errors travel as text only, so every failure the daemon
 * reports is code 999 at the plugin, as upstream's.
 *
 * The gob types below carry HEAD's field sets (skel.CmdArgs with NetnsOverride, types.Route with
 * MTU/AdvMSS/Priority/Table/Scope, Interface with Mtu/SocketPath/PciID); gob matches fields by
 * name, so 1.1.1 peers simply skip the ones they lack.
 */
import type { DNS, IPConfig, Interface, Result, Route } from "../../shared/cni/types.ts";
import { formatIP, ipFromBytes, ipToBytes, parseIP, type IPAddr } from "../../shared/ip/addr.ts";
import { maskBits, maskToPrefix, parseCIDR } from "../../shared/ip/cidr.ts";
import { gob } from "./gob.ts";

export const RPC_PATH = "/_goRPC_";
export const RPC_CONNECTED = "200 Connected to Go RPC";

export const METHOD_ALLOCATE = "DHCP.Allocate";
export const METHOD_RELEASE = "DHCP.Release";
export const METHOD_CHECK = "DHCP.Check";
export const METHOD_GC = "DHCP.GC";

/** Go net/rpc's answer for a method its service lacks (server.go). */
export function cannotFindMethod(method: string): string {
  return `rpc: can't find method ${method}`;
}

/**
 * Go net/rpc's answer for a call it cannot route (server.go `readRequestHeader`): no dot, a
 * service not registered (the part before the last dot), or a method the service lacks.
 */
export function unroutableCall(serviceMethod: string, services: ReadonlySet<string>): string {
  const dot = serviceMethod.lastIndexOf(".");
  if (dot < 0) return `rpc: service/method request ill-formed: ${serviceMethod}`;
  if (!services.has(serviceMethod.slice(0, dot))) return `rpc: can't find service ${serviceMethod}`;
  return cannotFindMethod(serviceMethod);
}

/** rpc.Request: the header of a call. */
export const RequestType = gob.struct("Request", [
  { name: "ServiceMethod", type: gob.string },
  { name: "Seq", type: gob.uint },
]);

/** rpc.Response: the header of an answer. */
export const ResponseType = gob.struct("Response", [
  { name: "ServiceMethod", type: gob.string },
  { name: "Seq", type: gob.uint },
  { name: "Error", type: gob.string },
]);

/** skel.CmdArgs. */
export const CmdArgsType = gob.struct("CmdArgs", [
  { name: "ContainerID", type: gob.string },
  { name: "Netns", type: gob.string },
  { name: "IfName", type: gob.string },
  { name: "Args", type: gob.string },
  { name: "Path", type: gob.string },
  { name: "NetnsOverride", type: gob.string },
  { name: "StdinData", type: gob.bytes },
]);

/** struct{}: Release's reply, and the reply sent with every error. */
export const EmptyType = gob.struct("", []);

const IPNetType = gob.struct("IPNet", [
  { name: "IP", type: gob.bytes },
  { name: "Mask", type: gob.bytes },
]);
// Go names a struct type after the way it is first reached: through `[]*T` the (pointer's) name is
// empty, as a field of type T it is "T". Interface, IPConfig and Route are only reached as []*T.
const InterfaceType = gob.struct("", [
  { name: "Name", type: gob.string },
  { name: "Mac", type: gob.string },
  { name: "Mtu", type: gob.int },
  { name: "Sandbox", type: gob.string },
  { name: "SocketPath", type: gob.string },
  { name: "PciID", type: gob.string },
]);
const IPConfigType = gob.struct("", [
  { name: "Interface", type: gob.int },
  { name: "Address", type: IPNetType },
  { name: "Gateway", type: gob.bytes },
]);
const RouteType = gob.struct("", [
  { name: "Dst", type: IPNetType },
  { name: "GW", type: gob.bytes },
  { name: "MTU", type: gob.int },
  { name: "AdvMSS", type: gob.int },
  { name: "Priority", type: gob.int },
  { name: "Table", type: gob.int },
  { name: "Scope", type: gob.int },
]);
const StringsType = gob.slice("[]string", gob.string);
const DNSType = gob.struct("DNS", [
  { name: "Nameservers", type: StringsType },
  { name: "Domain", type: gob.string },
  { name: "Search", type: StringsType },
  { name: "Options", type: StringsType },
]);

/** current.Result (types/100). */
export const ResultType = gob.struct("Result", [
  { name: "CNIVersion", type: gob.string },
  { name: "Interfaces", type: gob.slice("[]*types100.Interface", InterfaceType) },
  { name: "IPs", type: gob.slice("[]*types100.IPConfig", IPConfigType) },
  { name: "Routes", type: gob.slice("[]*types.Route", RouteType) },
  { name: "DNS", type: DNSType },
]);

/** What the plugin forwards (skel.CmdArgs with the config as text). */
export interface RpcArgs {
  containerID: string;
  netns: string;
  ifName: string;
  args: string;
  path: string;
  stdinData: string;
}

export class RpcProtocolError extends Error {
  override name = "RpcProtocolError";
}

export function argsToGob(a: RpcArgs): Record<string, unknown> {
  return {
    ContainerID: a.containerID,
    Netns: a.netns,
    IfName: a.ifName,
    Args: a.args,
    Path: a.path,
    StdinData: new TextEncoder().encode(a.stdinData),
  };
}

function field<T>(obj: Record<string, unknown>, name: string, check: (v: unknown) => v is T, zero: T): T {
  const v = obj[name];
  if (v === undefined) return zero;
  if (!check(v)) throw new RpcProtocolError(`field ${name} has the wrong type`);
  return v;
}
const isString = (v: unknown): v is string => typeof v === "string";
const isNumber = (v: unknown): v is number => typeof v === "number";
const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array;
const isArray = (v: unknown): v is unknown[] => Array.isArray(v);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/** A decoded value as a struct (objects only). */
export function asStruct(v: unknown, what: string): Record<string, unknown> {
  if (!isObject(v)) throw new RpcProtocolError(`${what} is not a struct`);
  return v;
}

export function argsFromGob(v: unknown): RpcArgs {
  const o = asStruct(v, "CmdArgs");
  return {
    containerID: field(o, "ContainerID", isString, ""),
    netns: field(o, "Netns", isString, ""),
    ifName: field(o, "IfName", isString, ""),
    args: field(o, "Args", isString, ""),
    path: field(o, "Path", isString, ""),
    stdinData: new TextDecoder().decode(field(o, "StdinData", isBytes, new Uint8Array(0))),
  };
}

// ---- net.IPNet / net.IP ↔ CNI text

function ipBytes(text: string): Uint8Array {
  const ip = parseIP(text);
  if (ip === null) throw new RpcProtocolError(`not an IP address: ${JSON.stringify(text)}`);
  return ipToBytes(ip);
}

function ipNetToGob(cidr: string): Record<string, unknown> {
  const c = parseCIDR(cidr);
  if (c === null) throw new RpcProtocolError(`not a CIDR: ${JSON.stringify(cidr)}`);
  const mask: IPAddr = { family: c.ip.family, value: maskBits(c.prefixLen, c.ip.family) };
  return { IP: ipToBytes(c.ip), Mask: ipToBytes(mask) };
}

function ipText(b: Uint8Array, what: string): string {
  const ip = ipFromBytes(b);
  if (ip === null) throw new RpcProtocolError(`${what}: ${b.byteLength}-byte IP address`);
  return formatIP(ip);
}

function ipNetFromGob(v: unknown, what: string): string {
  const o = asStruct(v, what);
  const ip = field(o, "IP", isBytes, new Uint8Array(0));
  const mask = field(o, "Mask", isBytes, new Uint8Array(0));
  const text = ipText(ip, what);
  // A 16-byte mask with an IPv4 address (v4-in-v6 form) counts its last 32 bits, as Go prints it.
  const ones = maskToPrefix(mask);
  if (ones === undefined) throw new RpcProtocolError(`${what}: non-contiguous mask`);
  const prefix = ones - (text.includes(":") ? 0 : Math.max(0, mask.byteLength - 4) * 8);
  return `${text}/${prefix}`;
}

// ---- current.Result ↔ CNI result

export function resultToGob(r: Result): Record<string, unknown> {
  return {
    Interfaces: (r.interfaces ?? []).map((i: Interface) => ({
      Name: i.name,
      Mac: i.mac,
      Mtu: i.mtu,
      Sandbox: i.sandbox,
      SocketPath: i.socketPath,
      PciID: i.pciID,
    })),
    IPs: (r.ips ?? []).map((ip: IPConfig) => ({
      Interface: ip.interface,
      Address: ipNetToGob(ip.address),
      Gateway: ip.gateway === undefined ? undefined : ipBytes(ip.gateway),
    })),
    Routes: (r.routes ?? []).map((rt: Route) => ({
      Dst: ipNetToGob(rt.dst),
      GW: rt.gw === undefined ? undefined : ipBytes(rt.gw),
      MTU: rt.mtu,
      AdvMSS: rt.advmss,
      Priority: rt.priority,
      Table: rt.table,
      Scope: rt.scope,
    })),
    DNS: {
      Nameservers: r.dns?.nameservers,
      Domain: r.dns?.domain,
      Search: r.dns?.search,
      Options: r.dns?.options,
    },
  };
}

function strings(o: Record<string, unknown>, name: string): string[] | undefined {
  const list = field(o, name, isArray, []);
  if (list.length === 0) return undefined;
  if (!list.every(isString)) throw new RpcProtocolError(`field ${name} is not a list of strings`);
  return list as string[];
}

function structs(o: Record<string, unknown>, name: string): Record<string, unknown>[] {
  return field(o, name, isArray, []).map((v, i) => asStruct(v, `${name}[${i}]`));
}

const INTERFACE_STRINGS = [["Mac", "mac"], ["Sandbox", "sandbox"], ["SocketPath", "socketPath"], ["PciID", "pciID"]] as const;
const ROUTE_INTS = [["MTU", "mtu"], ["AdvMSS", "advmss"], ["Priority", "priority"], ["Table", "table"], ["Scope", "scope"]] as const;
const DNS_LISTS = [["Nameservers", "nameservers"], ["Search", "search"], ["Options", "options"]] as const;

export function resultFromGob(v: unknown): Result {
  const o = asStruct(v, "Result");
  const out: Result = {};
  const interfaces = structs(o, "Interfaces").map((i): Interface => {
    const itf: Interface = { name: field(i, "Name", isString, "") };
    for (const [goName, key] of INTERFACE_STRINGS) {
      const s = field(i, goName, isString, "");
      if (s !== "") itf[key] = s;
    }
    const mtu = field(i, "Mtu", isNumber, 0);
    if (mtu !== 0) itf.mtu = mtu;
    return itf;
  });
  if (interfaces.length > 0) out.interfaces = interfaces;
  const ips = structs(o, "IPs").map((ip, n): IPConfig => {
    const c: IPConfig = { address: ipNetFromGob(ip["Address"] ?? {}, `IPs[${n}].Address`) };
    const gw = field(ip, "Gateway", isBytes, new Uint8Array(0));
    if (gw.byteLength > 0) c.gateway = ipText(gw, `IPs[${n}].Gateway`);
    if (ip["Interface"] !== undefined) c.interface = field(ip, "Interface", isNumber, 0);
    return c;
  });
  if (ips.length > 0) out.ips = ips;
  const routes = structs(o, "Routes").map((rt, n): Route => {
    const r: Route = { dst: ipNetFromGob(rt["Dst"] ?? {}, `Routes[${n}].Dst`) };
    const gw = field(rt, "GW", isBytes, new Uint8Array(0));
    if (gw.byteLength > 0) r.gw = ipText(gw, `Routes[${n}].GW`);
    for (const [goName, key] of ROUTE_INTS) {
      const i = field(rt, goName, isNumber, 0);
      if (i !== 0) r[key] = i;
    }
    return r;
  });
  if (routes.length > 0) out.routes = routes;
  const dns = isObject(o["DNS"]) ? o["DNS"] : {};
  const d: DNS = {};
  for (const [goName, key] of DNS_LISTS) {
    const list = strings(dns, goName);
    if (list) d[key] = list;
  }
  const domain = field(dns, "Domain", isString, "");
  if (domain !== "") d.domain = domain;
  if (Object.keys(d).length > 0) out.dns = d;
  return out;
}
