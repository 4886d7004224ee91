/**
 * A minimal Protocol Buffers (proto3) writer: the wire types this exporter needs (varint,
 * 64-bit fixed, length-delimited), field by field, into a growing byte buffer. A nested message is
 * written into a writer of its own and then copied in behind its length; the messages here are a
 * few levels deep and small, so the copy costs less than a size pass would in code.
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;

const utf8 = new TextEncoder();

export class ProtoWriter {
  #bytes = new Uint8Array(256);
  #length = 0;
  readonly #view8 = new DataView(new ArrayBuffer(8));

  /** The bytes written so far (a view, valid until the next write). */
  finish(): Uint8Array {
    return this.#bytes.subarray(0, this.#length);
  }

  /** A uint32 / enum / bool field as a varint; the proto3 default (0) is not written. */
  uint32(field: number, value: number): this {
    if (value === 0) return this;
    this.#tag(field, WIRE_VARINT);
    this.#varint(value);
    return this;
  }

  /** A bool field, written even when false (for a oneof member, whose presence matters). */
  boolAlways(field: number, value: boolean): this {
    this.#tag(field, WIRE_VARINT);
    this.#byte(value ? 1 : 0);
    return this;
  }

  /** An int64 field, written even when 0 (oneof member); negatives as 10-byte two's complement. */
  int64Always(field: number, value: bigint): this {
    this.#tag(field, WIRE_VARINT);
    let rest = BigInt.asUintN(64, value);
    while (rest >= 0x80n) {
      this.#byte(Number(rest & 0x7fn) | 0x80);
      rest >>= 7n;
    }
    this.#byte(Number(rest));
    return this;
  }

  /** A fixed64 field (little-endian); 0 is not written. */
  fixed64(field: number, value: bigint): this {
    if (value === 0n) return this;
    this.#tag(field, WIRE_FIXED64);
    this.#view8.setBigUint64(0, BigInt.asUintN(64, value), true);
    this.#raw(new Uint8Array(this.#view8.buffer));
    return this;
  }

  /** A double field (IEEE 754, little-endian), written even when 0 (oneof member). */
  doubleAlways(field: number, value: number): this {
    this.#tag(field, WIRE_FIXED64);
    this.#view8.setFloat64(0, value, true);
    this.#raw(new Uint8Array(this.#view8.buffer));
    return this;
  }

  /** A string field in UTF-8; "" is not written. */
  string(field: number, value: string): this {
    if (value === "") return this;
    return this.stringAlways(field, value);
  }

  /** A string field, written even when "" (oneof member). */
  stringAlways(field: number, value: string): this {
    return this.bytesAlways(field, utf8.encode(value));
  }

  /** A bytes field; empty is not written. */
  bytes(field: number, value: Uint8Array): this {
    if (value.length === 0) return this;
    return this.bytesAlways(field, value);
  }

  bytesAlways(field: number, value: Uint8Array): this {
    this.#tag(field, WIRE_LENGTH_DELIMITED);
    this.#varint(value.length);
    this.#raw(value);
    return this;
  }

  /** An embedded message field: `write` fills a fresh writer, whose bytes go in behind their length. */
  message(field: number, write: (inner: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    write(inner);
    return this.bytesAlways(field, inner.finish());
  }

  #tag(field: number, wireType: number): void {
    this.#varint(field * 8 + wireType);
  }

  /** A non-negative integer below 2^53 as a varint. */
  #varint(value: number): void {
    let rest = value;
    while (rest >= 0x80) {
      this.#byte((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    this.#byte(rest);
  }

  #byte(value: number): void {
    this.#reserve(1);
    this.#bytes[this.#length++] = value;
  }

  #raw(value: Uint8Array): void {
    this.#reserve(value.length);
    this.#bytes.set(value, this.#length);
    this.#length += value.length;
  }

  #reserve(count: number): void {
    if (this.#length + count <= this.#bytes.length) return;
    const grown = new Uint8Array(Math.max(this.#bytes.length * 2, this.#length + count));
    grown.set(this.#bytes.subarray(0, this.#length));
    this.#bytes = grown;
  }
}
