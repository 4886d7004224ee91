/**
 * Go's encoding/gob, for exactly what Go's net/rpc needs here (the wire format is specified in Go's
 * encoding/gob/doc.go): a stream of messages, each `uint length` + `int typeId` + payload. A
 * negative type id defines type `-id` (a `wireType`); a positive one is a value of that type.
 *
 * Numbers: an unsigned integer < 128 is one byte; larger ones are big-endian, minimal length,
 * preceded by the negated byte count. A signed integer i is sent as the unsigned `i << 1`
 * (i ≥ 0) or `(~i << 1) | 1` (i < 0). Strings and []byte: length + bytes. Slices: count +
 * elements. Structs: (field-number delta, value) pairs ending with delta 0; fields with a zero
 * value are left out, except struct-valued ones (always sent unless they are nil pointers).
 *
 * Encoding follows Go's choices byte for byte: type ids are given per stream from 65 on in Go's
 * order (a struct before its fields, a slice after its element), definitions are sent before a
 * value, each type once per stream, depth-first in field order. Decoding is driven by the
 * definitions the peer sends, into plain values: structs become objects keyed by field name
 * (absent fields are zero), []byte a Uint8Array, integers and floats numbers (integers beyond
 * 2^53: refused), maps Maps, GobEncoder/BinaryMarshaler/TextMarshaler values their raw bytes.
 * Interface-typed and complex values are refused: net/rpc's requests and replies of the dhcp
 * daemon have none. The encoder knows only the kinds those use (no floats, maps or arrays).
 */

/** A type of the values this codec encodes. Struct-valued fields are sent even when empty unless `pointer`. */
export type GobType =
  | { readonly kind: "bool" | "int" | "uint" | "bytes" | "string" }
  | { readonly kind: "slice"; readonly name: string; readonly elem: GobType }
  | { readonly kind: "struct"; readonly name: string; readonly fields: readonly GobField[] };

export interface GobField {
  readonly name: string;
  readonly type: GobType;
  /** A Go pointer to a struct: left out when undefined (a non-pointer struct field is always sent). */
  readonly pointer?: boolean;
}

export const gob = {
  bool: { kind: "bool" } as GobType,
  int: { kind: "int" } as GobType,
  uint: { kind: "uint" } as GobType,
  bytes: { kind: "bytes" } as GobType,
  string: { kind: "string" } as GobType,
  slice: (name: string, elem: GobType): GobType => ({ kind: "slice", name, elem }),
  struct: (name: string, fields: readonly GobField[]): GobType => ({ kind: "struct", name, fields }),
};

export class GobError extends Error {
  override name = "GobError";
}

/** Builtin type ids (encoding/gob/type.go). */
const BUILTIN_IDS: Readonly<Record<string, number>> = { bool: 1, int: 2, uint: 3, bytes: 5, string: 6 };
const ID_COMPLEX = 7;
const ID_INTERFACE = 8;
/** The first id Go gives a user type in a fresh process (64 is taken by its gobEncoderType). */
const FIRST_USER_ID = 65;

// ---------------------------------------------------------------- writing

class Writer {
  #buf = new Uint8Array(256);
  #len = 0;

  #grow(n: number): void {
    if (this.#len + n <= this.#buf.byteLength) return;
    const next = new Uint8Array(Math.max(this.#buf.byteLength * 2, this.#len + n));
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }

  bytes(b: Uint8Array): void {
    this.#grow(b.byteLength);
    this.#buf.set(b, this.#len);
    this.#len += b.byteLength;
  }

  uint(n: number | bigint): void {
    const v = BigInt(n);
    if (v < 0n) throw new GobError(`negative value ${v} for an unsigned integer`);
    if (v < 128n) {
      this.bytes(Uint8Array.of(Number(v)));
      return;
    }
    const out: number[] = [];
    for (let x = v; x > 0n; x >>= 8n) out.unshift(Number(x & 0xffn));
    if (out.length > 8) throw new GobError(`value ${v} does not fit in 64 bits`);
    this.bytes(Uint8Array.from([256 - out.length, ...out]));
  }

  int(n: number | bigint): void {
    const v = BigInt(n);
    this.uint(v < 0n ? ((~v) << 1n) | 1n : v << 1n);
  }

  string(s: string): void {
    this.lengthPrefixed(new TextEncoder().encode(s));
  }

  lengthPrefixed(b: Uint8Array): void {
    this.uint(b.byteLength);
    this.bytes(b);
  }

  done(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

function isZero(t: GobType, v: unknown): boolean {
  if (v === undefined || v === null) return true;
  switch (t.kind) {
    case "bool":
      return v === false;
    case "int":
    case "uint":
      return v === 0 || v === 0n;
    case "bytes":
      return (v as Uint8Array).byteLength === 0;
    case "string":
      return v === "";
    case "slice":
      return (v as unknown[]).length === 0;
    case "struct":
      return false;
  }
}

/**
 * One direction of a gob stream: remembers which types it has defined. `encode` returns the
 * messages (type definitions first) for one top-level struct value.
 */
export class GobEncoder {
  readonly #ids = new Map<GobType, number>();
  readonly #sent = new Set<GobType>();
  #nextId = FIRST_USER_ID;

  #id(t: GobType): number {
    const builtin = BUILTIN_IDS[t.kind];
    if (builtin !== undefined) return builtin;
    const have = this.#ids.get(t);
    if (have !== undefined) return have;
    if (t.kind === "struct") {
      this.#ids.set(t, this.#nextId++);
      for (const f of t.fields) this.#id(f.type);
    } else if (t.kind === "slice") {
      this.#id(t.elem);
      this.#ids.set(t, this.#nextId++);
    }
    return this.#ids.get(t) ?? 0;
  }

  #message(out: Writer, body: (w: Writer) => void): void {
    const w = new Writer();
    body(w);
    out.lengthPrefixed(w.done());
  }

  #sendType(out: Writer, t: GobType): void {
    if (t.kind !== "struct" && t.kind !== "slice") return;
    if (this.#sent.has(t)) return;
    this.#sent.add(t);
    const id = this.#id(t);
    this.#message(out, (w) => {
      w.int(-id);
      // wireType{SliceT (field 1) | StructT (field 2)}, each starting with CommonType{Name, Id}.
      w.uint(t.kind === "slice" ? 2 : 3);
      w.uint(1);
      if (t.name !== "") {
        w.uint(1);
        w.string(t.name);
        w.uint(1);
      } else w.uint(2);
      w.int(id);
      w.uint(0);
      if (t.kind === "slice") {
        w.uint(1);
        w.int(this.#id(t.elem));
      } else if (t.fields.length > 0) {
        w.uint(1);
        w.uint(t.fields.length);
        for (const f of t.fields) {
          w.uint(1);
          w.string(f.name);
          w.uint(1);
          w.int(this.#id(f.type));
          w.uint(0);
        }
      }
      w.uint(0);
      w.uint(0);
    });
    if (t.kind === "slice") this.#sendType(out, t.elem);
    else for (const f of t.fields) this.#sendType(out, f.type);
  }

  #value(w: Writer, t: GobType, v: unknown): void {
    switch (t.kind) {
      case "bool":
        w.uint(v === true ? 1 : 0);
        return;
      case "int":
        w.int(v as number | bigint);
        return;
      case "uint":
        w.uint(v as number | bigint);
        return;
      case "bytes":
        w.lengthPrefixed((v as Uint8Array | undefined) ?? new Uint8Array(0));
        return;
      case "string":
        w.string((v as string | undefined) ?? "");
        return;
      case "slice": {
        const items = (v as unknown[] | undefined) ?? [];
        w.uint(items.length);
        for (const item of items) this.#value(w, t.elem, item);
        return;
      }
      case "struct": {
        const obj = (v as Record<string, unknown> | undefined) ?? {};
        let last = -1;
        t.fields.forEach((f, i) => {
          const fv = obj[f.name];
          if (f.type.kind === "struct" ? f.pointer === true && fv === undefined : isZero(f.type, fv)) return;
          w.uint(i - last);
          last = i;
          this.#value(w, f.type, fv);
        });
        w.uint(0);
        return;
      }
    }
  }

  /** The bytes for one top-level value of struct type `t`. */
  encode(t: GobType, value: Record<string, unknown>): Uint8Array {
    if (t.kind !== "struct") throw new GobError("only struct values are sent at top level");
    const out = new Writer();
    this.#sendType(out, t);
    this.#message(out, (w) => {
      w.int(this.#id(t));
      this.#value(w, t, value);
    });
    return out.done();
  }
}

// ---------------------------------------------------------------- reading

/** A type as the peer defined it (component types by id). */
type WireDef =
  | { kind: "slice"; name: string; elem: number }
  | { kind: "array"; name: string; elem: number; len: number }
  | { kind: "map"; name: string; key: number; elem: number }
  | { kind: "struct"; name: string; fields: { name: string; id: number }[] }
  | { kind: "opaque"; name: string };

class Reader {
  readonly #b: Uint8Array;
  #p = 0;
  constructor(b: Uint8Array) {
    this.#b = b;
  }

  get done(): boolean {
    return this.#p >= this.#b.byteLength;
  }

  byte(): number {
    const v = this.#b[this.#p];
    if (v === undefined) throw new GobError("unexpected end of gob message");
    this.#p++;
    return v;
  }

  bigUint(): bigint {
    const first = this.byte();
    if (first < 128) return BigInt(first);
    const n = 256 - first;
    if (n > 8) throw new GobError(`invalid unsigned integer length ${n}`);
    let v = 0n;
    for (let i = 0; i < n; i++) v = (v << 8n) | BigInt(this.byte());
    return v;
  }

  uint(): number {
    const v = this.bigUint();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GobError(`integer ${v} is too large`);
    return Number(v);
  }

  int(): number {
    const u = this.bigUint();
    const v = (u & 1n) === 1n ? ~(u >> 1n) : u >> 1n;
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw new GobError(`integer ${v} is too large`);
    return Number(v);
  }

  float(): number {
    const u = this.bigUint();
    const bytes = new Uint8Array(8);
    for (let i = 0, x = u; i < 8; i++, x >>= 8n) bytes[i] = Number(x & 0xffn);
    return new DataView(bytes.buffer).getFloat64(0, false);
  }

  bytes(): Uint8Array {
    const n = this.uint();
    if (this.#p + n > this.#b.byteLength) throw new GobError("byte string overruns the gob message");
    const out = this.#b.slice(this.#p, this.#p + n);
    this.#p += n;
    return out;
  }

  string(): string {
    return new TextDecoder("utf-8", { fatal: false }).decode(this.bytes());
  }
}

/** Reads one struct's (delta, value) pairs, handing each field number to `field`. */
function readStruct(r: Reader, field: (n: number) => void): void {
  let n = -1;
  for (;;) {
    const delta = r.uint();
    if (delta === 0) return;
    n += delta;
    field(n);
  }
}

/** A decoded wireType (the definition message of a user type). */
function readWireType(r: Reader): WireDef {
  let def: WireDef | undefined;
  const common = (): { name: string; id: number } => {
    const c = { name: "", id: 0 };
    readStruct(r, (n) => {
      if (n === 0) c.name = r.string();
      else if (n === 1) c.id = r.int();
      else throw new GobError(`unknown CommonType field ${n}`);
    });
    return c;
  };
  readStruct(r, (which) => {
    let name = "";
    const ids: number[] = [];
    const fields: { name: string; id: number }[] = [];
    readStruct(r, (n) => {
      if (n === 0) {
        name = common().name;
      } else if (which === 2 && n === 1) {
        // structType.Field: []fieldType{Name, Id}
        const count = r.uint();
        for (let i = 0; i < count; i++) {
          const f = { name: "", id: 0 };
          readStruct(r, (k) => {
            if (k === 0) f.name = r.string();
            else if (k === 1) f.id = r.int();
            else throw new GobError(`unknown fieldType field ${k}`);
          });
          fields.push(f);
        }
      } else if (which <= 3 && which !== 2) {
        ids[n] = r.int();
      } else throw new GobError(`unknown field ${n} in wireType variant ${which}`);
    });
    switch (which) {
      case 0:
        def = { kind: "array", name, elem: ids[1] ?? 0, len: ids[2] ?? 0 };
        break;
      case 1:
        def = { kind: "slice", name, elem: ids[1] ?? 0 };
        break;
      case 2:
        def = { kind: "struct", name, fields };
        break;
      case 3:
        def = { kind: "map", name, key: ids[1] ?? 0, elem: ids[2] ?? 0 };
        break;
      case 4:
      case 5:
      case 6:
        def = { kind: "opaque", name };
        break;
      default:
        throw new GobError(`unknown wireType variant ${which}`);
    }
  });
  if (def === undefined) throw new GobError("empty type definition");
  return def;
}

/** One value received: its type id (the peer's numbering) and the decoded value. */
export interface GobValue {
  typeId: number;
  value: unknown;
}

/**
 * The receiving side of a gob stream: feed it bytes as they arrive, take values out as they are
 * complete. Messages longer than `maxMessage` are refused.
 */
export class GobDecoder {
  readonly #defs = new Map<number, WireDef>();
  readonly #maxMessage: number;
  #buf = new Uint8Array(0);

  constructor(maxMessage = 1 << 20) {
    this.#maxMessage = maxMessage;
  }

  push(chunk: Uint8Array): void {
    const next = new Uint8Array(this.#buf.byteLength + chunk.byteLength);
    next.set(this.#buf);
    next.set(chunk, this.#buf.byteLength);
    this.#buf = next;
  }

  /** Bytes received but not yet consumed. */
  get pending(): number {
    return this.#buf.byteLength;
  }

  /** The next complete value, or undefined until more bytes arrive. Type definitions are absorbed on the way. */
  next(): GobValue | undefined {
    for (;;) {
      if (this.#buf.byteLength === 0) return undefined;
      const start = headerLength(this.#buf);
      if (this.#buf.byteLength < start) return undefined;
      const len = new Reader(this.#buf).uint();
      if (len > this.#maxMessage) throw new GobError(`gob message of ${len} bytes exceeds ${this.#maxMessage}`);
      if (this.#buf.byteLength < start + len) return undefined;
      const body = new Reader(this.#buf.subarray(start, start + len));
      this.#buf = this.#buf.slice(start + len);
      const id = body.int();
      if (id < 0) {
        this.#defs.set(-id, readWireType(body));
        continue;
      }
      const value = this.#read(body, id, true);
      return { typeId: id, value };
    }
  }

  #read(r: Reader, id: number, topLevel = false): unknown {
    switch (id) {
      case 1:
        return r.uint() !== 0;
      case 2:
        return r.int();
      case 3:
        return r.uint();
      case 4:
        return r.float();
      case 5:
        return r.bytes();
      case 6:
        return r.string();
      case ID_COMPLEX:
        throw new GobError("complex values are not supported");
      case ID_INTERFACE:
        throw new GobError("interface values are not supported");
    }
    const def = this.#defs.get(id);
    if (def === undefined) throw new GobError(`value of undefined type id ${id}`);
    if (topLevel && def.kind !== "struct") {
      // A top-level non-struct value is sent as field 0 of a one-field struct.
      if (r.uint() !== 1) throw new GobError("malformed top-level value");
      const v = this.#read(r, id);
      if (r.uint() !== 0) throw new GobError("malformed top-level value");
      return v;
    }
    switch (def.kind) {
      case "opaque":
        return r.bytes();
      case "slice":
      case "array": {
        const count = r.uint();
        if (def.kind === "array" && count !== def.len) throw new GobError(`array of ${count} elements for [${def.len}]`);
        const out: unknown[] = [];
        for (let i = 0; i < count; i++) out.push(this.#read(r, def.elem));
        return out;
      }
      case "map": {
        const count = r.uint();
        const out = new Map<unknown, unknown>();
        for (let i = 0; i < count; i++) out.set(this.#read(r, def.key), this.#read(r, def.elem));
        return out;
      }
      case "struct": {
        const out: Record<string, unknown> = {};
        readStruct(r, (n) => {
          const f = def.fields[n];
          if (f === undefined) throw new GobError(`field ${n} out of range for ${def.name || "struct"}`);
          out[f.name] = this.#read(r, f.id);
        });
        return out;
      }
    }
  }
}

/** Bytes taken by the leading length of a message. */
function headerLength(b: Uint8Array): number {
  const first = b[0] ?? 0;
  return first < 128 ? 1 : 1 + (256 - first);
}
