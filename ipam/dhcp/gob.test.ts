import { describe, expect, test } from "bun:test";
import { GobDecoder, GobEncoder, GobError, gob } from "./gob.ts";
import {
  CmdArgsType,
  EmptyType,
  RequestType,
  ResponseType,
  ResultType,
  argsFromGob,
  argsToGob,
  resultFromGob,
  resultToGob,
} from "./rpc-protocol.ts";

/**
 * Golden bytes. `GO111_*`: captured on the unix socket between the Go 1.1.1 dhcp plugin and the Go
 * 1.1.1 daemon (Debian containernetworking-plugins) during an ADD and a DEL against dnsmasq.
 * `GO119_*`: what Go 1.19's encoding/gob writes in a fresh process for net/rpc's Request/Response
 * and HEAD's skel.CmdArgs / current.Result shapes with the values used below.
 */
const GO111_ALLOCATE_CALL = [
    "2fff81030101075265717565737401ff82000102010d536572766963654d6574686f64010c000103536571010600000012ff",
    "82010d444843502e416c6c6f63617465005aff8303010107436d644172677301ff84000106010b436f6e7461696e65724944",
    "010c0001054e65746e73010c00010649664e616d65010c00010441726773010c00010450617468010c000109537464696e44",
    "617461010a000000fff3ff840102633101102f72756e2f6e65746e732f6361706331010465746830020c2f7573722f6c6962",
    "2f636e6901ffc37b22636e6956657273696f6e223a22312e302e30222c226e616d65223a226361706e6574222c2274797065",
    "223a22627269646765222c226970616d223a7b2274797065223a2264686370222c226461656d6f6e536f636b657450617468",
    "223a222f746d702f6361702f70726f78792e736f636b222c2272657175657374223a5b7b226f7074696f6e223a2231323122",
    "7d2c7b226f7074696f6e223a2236227d2c7b226f7074696f6e223a223135227d2c7b226f7074696f6e223a223236227d5d7d",
    "7d0a00",
  ].join("");
const GO111_ALLOCATE_REPLY = [
    "3aff8103010108526573706f6e736501ff82000103010d536572766963654d6574686f64010c000103536571010600010545",
    "72726f72010c00000012ff82010d444843502e416c6c6f636174650051ff8303010106526573756c7401ff84000105010a43",
    "4e4956657273696f6e010c00010a496e746572666163657301ff8800010349507301ff8e000106526f7574657301ff920001",
    "03444e5301ff9400000024ff87020101155b5d2a74797065733130302e496e7465726661636501ff880001ff86000029ff85",
    "030102ff8600010301044e616d65010c0001034d6163010c00010753616e64626f78010c00000023ff8d020101145b5d2a74",
    "797065733130302e4950436f6e66696701ff8e0001ff8a000033ff89030102ff8a0001030109496e74657266616365010400",
    "01074164647265737301ff8c00010747617465776179010a00000023ff8b0301010549504e657401ff8c0001020102495001",
    "0a0001044d61736b010a0000001dff910201010e5b5d2a74797065732e526f75746501ff920001ff9000001cff8f030102ff",
    "90000102010344737401ff8c0001024757010a00000046ff9303010103444e5301ff94000104010b4e616d65736572766572",
    "7301ff96000106446f6d61696e010c00010653656172636801ff960001074f7074696f6e7301ff9600000016ff9502010108",
    "5b5d737472696e6701ff9600010c000033ff8403010201040a63007c0104ffffff000001040a630001000101010104000000",
    "000104000000000001040a63000100010000",
  ].join("");
const GO111_RELEASE_REPLY = [
    "3aff8103010108526573706f6e736501ff82000103010d536572766963654d6574686f64010c000103536571010600010545",
    "72726f72010c00000011ff82010c444843502e52656c65617365000aff97030102ff9800000003ff9800",
  ].join("");
const GO119_CHECK_CALL = [
    "2fff81030101075265717565737401ff82000102010d536572766963654d6574686f64010c000103536571010600000011ff",
    "82010a444843502e436865636b0103006cff8303010107436d644172677301ff84000107010b436f6e7461696e6572494401",
    "0c0001054e65746e73010c00010649664e616d65010c00010441726773010c00010450617468010c00010d4e65746e734f76",
    "657272696465010c000109537464696e44617461010a00000046ff84010363747201102f7661722f72756e2f6e65746e732f",
    "7801046e657431011349676e6f7265556e6b6e6f776e3d313b4b3d76020131010c7b226e616d65223a226e227d00",
  ].join("");
const GO119_ALLOCATE_REPLY = [
    "3aff8103010108526573706f6e736501ff82000103010d536572766963654d6574686f64010c000103536571010600010545",
    "72726f72010c00000015ff82010d444843502e416c6c6f6361746501ffc80051ff8303010106526573756c7401ff84000105",
    "010a434e4956657273696f6e010c00010a496e746572666163657301ff8800010349507301ff8e000106526f7574657301ff",
    "92000103444e5301ff9400000024ff87020101155b5d2a74797065733130302e496e7465726661636501ff880001ff860000",
    "4aff85030102ff8600010601044e616d65010c0001034d6163010c0001034d7475010400010753616e64626f78010c00010a",
    "536f636b657450617468010c0001055063694944010c00000023ff8d020101145b5d2a74797065733130302e4950436f6e66",
    "696701ff8e0001ff8a000033ff89030102ff8a0001030109496e7465726661636501040001074164647265737301ff8c0001",
    "0747617465776179010a00000023ff8b0301010549504e657401ff8c00010201024950010a0001044d61736b010a0000001d",
    "ff910201010e5b5d2a74797065732e526f75746501ff920001ff90000050ff8f030102ff90000107010344737401ff8c0001",
    "024757010a0001034d545501040001064164764d535301040001085072696f7269747901040001055461626c650104000105",
    "53636f7065010400000046ff9303010103444e5301ff94000104010b4e616d657365727665727301ff96000106446f6d6169",
    "6e010c00010653656172636801ff960001074f7074696f6e7301ff9600000016ff95020101085b5d737472696e6701ff9600",
    "010c0000ffcaff84020101046574683002fe0af0010c2f72756e2f6e65746e732f7800010201020101040a0102030104ffff",
    "ff000001040a01020100020110fd0000000000000000000000000100050110ffffffffffffffff0000000000000000000001",
    "02010104000000000104000000000001040a0102010364000101040a0909090104ffffffff0002fe0a2801fe096002ffc801",
    "fe01fa000101020931302e312e322e353308666430303a3a3533010c6578616d706c652e74657374010206612e7465737406",
    "622e746573740000",
  ].join("");
const GO119_GC_ERROR = [
    "3aff8103010108526573706f6e736501ff82000103010d536572766963654d6574686f64010c000103536571010600010545",
    "72726f72010c0000002eff820107444843502e47430101011e7270633a2063616e27742066696e64206d6574686f64204448",
    "43502e4743000aff83030102ff8400000003ff8400",
  ].join("");

const hex = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h, "hex"));
const toHex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

function decodeAll(h: string): unknown[] {
  const dec = new GobDecoder();
  dec.push(hex(h));
  const out: unknown[] = [];
  for (let v = dec.next(); v !== undefined; v = dec.next()) out.push(v.value);
  expect(dec.pending).toBe(0);
  return out;
}

/** The result behind GO119_ALLOCATE_REPLY. */
const HEAD_RESULT = {
  interfaces: [{ name: "eth0", mtu: 1400, sandbox: "/run/netns/x" }],
  ips: [{ interface: 1, address: "10.1.2.3/24", gateway: "10.1.2.1" }, { address: "fd00::1:5/64" }],
  routes: [
    { dst: "0.0.0.0/0", gw: "10.1.2.1", priority: 50 },
    { dst: "10.9.9.9/32", mtu: 1300, advmss: 1200, table: 100, scope: 253 },
  ],
  dns: { nameservers: ["10.1.2.53", "fd00::53"], domain: "example.test", search: ["a.test", "b.test"] },
};

describe("gob decoding of Go 1.1.1 traffic", () => {
  test("the plugin's DHCP.Allocate call: rpc.Request + skel.CmdArgs (1.1.1 shape)", () => {
    const [header, args] = decodeAll(GO111_ALLOCATE_CALL);
    expect(header).toEqual({ ServiceMethod: "DHCP.Allocate" }); // Seq 0 is a zero value: not sent
    const a = argsFromGob(args);
    expect(a).toMatchObject({ containerID: "c1", netns: "/run/netns/capc1", ifName: "eth0", args: "", path: "/usr/lib/cni" });
    expect(JSON.parse(a.stdinData)).toMatchObject({ name: "capnet", ipam: { type: "dhcp" } });
  });
  test("the daemon's reply: rpc.Response + current.Result (empty DNS struct sent, no CNIVersion)", () => {
    const [header, result] = decodeAll(GO111_ALLOCATE_REPLY);
    expect(header).toEqual({ ServiceMethod: "DHCP.Allocate" });
    expect(resultFromGob(result)).toEqual({
      ips: [{ address: "10.99.0.124/24", gateway: "10.99.0.1" }],
      routes: [{ dst: "0.0.0.0/0", gw: "10.99.0.1" }],
    });
  });
  test("DHCP.Release's reply is an empty struct", () => {
    expect(decodeAll(GO111_RELEASE_REPLY)).toEqual([{ ServiceMethod: "DHCP.Release" }, {}]);
  });
});

describe("gob encoding matches Go byte for byte", () => {
  test("rpc.Request + HEAD skel.CmdArgs", () => {
    const enc = new GobEncoder();
    const args = argsToGob({ containerID: "ctr", netns: "/var/run/netns/x", ifName: "net1", args: "IgnoreUnknown=1;K=v", path: "", stdinData: '{"name":"n"}' });
    const bytes = [enc.encode(RequestType, { ServiceMethod: "DHCP.Check", Seq: 3 }), enc.encode(CmdArgsType, { ...args, NetnsOverride: "1" })];
    expect(toHex(Buffer.concat(bytes))).toBe(GO119_CHECK_CALL);
  });
  test("rpc.Response + HEAD current.Result (v4 and v6 nets, *int fields, DNS)", () => {
    const enc = new GobEncoder();
    const bytes = [enc.encode(ResponseType, { ServiceMethod: "DHCP.Allocate", Seq: 200 }), enc.encode(ResultType, resultToGob(HEAD_RESULT))];
    expect(toHex(Buffer.concat(bytes))).toBe(GO119_ALLOCATE_REPLY);
    const [, back] = decodeAll(GO119_ALLOCATE_REPLY);
    expect(resultFromGob(back)).toEqual(HEAD_RESULT);
  });
  test("an error answer carries an empty struct; types are defined once per stream", () => {
    const enc = new GobEncoder();
    const bytes = [
      enc.encode(ResponseType, { ServiceMethod: "DHCP.GC", Seq: 1, Error: "rpc: can't find method DHCP.GC" }),
      enc.encode(EmptyType, {}),
    ];
    expect(toHex(Buffer.concat(bytes))).toBe(GO119_GC_ERROR);
    // Second use of the same types: no definitions, just the values.
    expect(toHex(enc.encode(EmptyType, {}))).toBe("03ff8400");
  });
});

describe("gob codec", () => {
  test("integers: one byte below 128, else negated byte count + big-endian; signed zig-zag", () => {
    const T = gob.struct("T", [
      { name: "U", type: gob.uint },
      { name: "I", type: gob.int },
      { name: "B", type: gob.bool },
      { name: "S", type: gob.slice("[]int", gob.int) },
    ]);
    const enc = new GobEncoder();
    const dec = new GobDecoder();
    for (const v of [{ U: 127, I: -1, B: true, S: [0, 0] }, { U: 256, I: -129, S: [] }, { U: 2 ** 40, I: 2 ** 40 }]) {
      dec.push(enc.encode(T, v));
      expect(dec.next()?.value).toEqual(Object.fromEntries(Object.entries(v).filter(([, x]) => !(Array.isArray(x) && x.length === 0))));
    }
    const bytes = enc.encode(T, { U: 256, I: -2 });
    expect(toHex(bytes)).toBe("09ff8201fe0100010300"); // 9 bytes: type 65, U (Δ1) 256, I (Δ1) -2, end
  });
  test("values arrive in any chunking; incomplete messages wait", () => {
    const all = hex(GO111_ALLOCATE_REPLY);
    const dec = new GobDecoder();
    const got: unknown[] = [];
    for (const b of all) {
      dec.push(Uint8Array.of(b));
      for (let v = dec.next(); v !== undefined; v = dec.next()) got.push(v.value);
    }
    expect(got).toHaveLength(2);
  });
  test("malformed streams are refused", () => {
    const dec = new GobDecoder(64);
    dec.push(hex("ff80"));
    expect(() => dec.next()).toThrow("exceeds 64");
    const undef = new GobDecoder();
    undef.push(hex("03ff8400"));
    expect(() => undef.next()).toThrow("undefined type id 66");
    const iface = new GobDecoder();
    iface.push(hex("021000"));
    expect(() => iface.next()).toThrow(GobError);
    const trunc = new GobDecoder();
    trunc.push(hex("04ff820105"));
    expect(() => trunc.next()).toThrow(GobError);
  });
});
