/**
 * A reader of the protobuf text format as `protoc --decode` prints it: nested `name { ... }`
 * blocks and `name: value` fields, strings in C escapes (octal, hex and the usual backslash
 * letters). Strings come back as bytes, so a bytes field (an id) and a UTF-8 string field are both
 * exact; other values come back as the token protoc printed (numbers, enum names, true/false).
 */

export class TextFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TextFormatError";
  }
}

export type TextValue = { kind: "token"; text: string } | { kind: "string"; bytes: Uint8Array } | { kind: "message"; fields: TextMessage };

/** A message's fields in the order printed (a repeated field appears once per element). */
export type TextMessage = Array<{ name: string; value: TextValue }>;

const utf8 = new TextEncoder();
/** White space and comments; a field name or a bare value (number, enum name, true, inf). */
const SPACE = /(?:\s+|#[^\n]*)+/y;
const TOKEN = /[-+.\w]+/y;

/** The fields of the top-level message in `text`. */
export function parseTextFormat(text: string): TextMessage {
  const reader = new Reader(text);
  const fields = reader.message();
  reader.skipSpace();
  if (!reader.atEnd()) throw new TextFormatError(`unexpected ${JSON.stringify(reader.rest(20))}`);
  return fields;
}

class Reader {
  readonly #text: string;
  #pos = 0;

  constructor(text: string) {
    this.#text = text;
  }

  atEnd(): boolean {
    return this.#pos >= this.#text.length;
  }

  rest(length: number): string {
    return this.#text.slice(this.#pos, this.#pos + length);
  }

  skipSpace(): void {
    SPACE.lastIndex = this.#pos;
    if (SPACE.test(this.#text)) this.#pos = SPACE.lastIndex;
  }

  /** Fields until a closing brace (not consumed) or the end. */
  message(): TextMessage {
    const fields: TextMessage = [];
    for (;;) {
      this.skipSpace();
      if (this.atEnd() || this.#peek() === "}" || this.#peek() === ">") return fields;
      const name = this.#token();
      this.skipSpace();
      if (this.#peek() === ":") {
        this.#pos++;
        this.skipSpace();
      }
      const open = this.#peek();
      if (open === "{" || open === "<") {
        this.#pos++;
        const inner = this.message();
        this.skipSpace();
        const close = this.#text[this.#pos++];
        if (close !== (open === "{" ? "}" : ">")) throw new TextFormatError(`field ${name}: unclosed message`);
        fields.push({ name, value: { kind: "message", fields: inner } });
      } else if (open === '"' || open === "'") {
        const parts: number[] = [];
        while (this.#peek() === '"' || this.#peek() === "'") {
          parts.push(...this.#quoted());
          this.skipSpace();
        }
        fields.push({ name, value: { kind: "string", bytes: Uint8Array.from(parts) } });
      } else {
        fields.push({ name, value: { kind: "token", text: this.#token() } });
      }
    }
  }

  #peek(): string | undefined {
    return this.#text[this.#pos];
  }

  #token(): string {
    TOKEN.lastIndex = this.#pos;
    const match = TOKEN.exec(this.#text);
    if (match === null) throw new TextFormatError(`expected a name or value at ${JSON.stringify(this.rest(20))}`);
    this.#pos = TOKEN.lastIndex;
    return match[0];
  }

  /** One quoted string, unescaped to bytes. */
  #quoted(): number[] {
    const quote = this.#text[this.#pos++];
    const bytes: number[] = [];
    for (;;) {
      const c = this.#text[this.#pos];
      if (c === undefined || c === "\n") throw new TextFormatError("unterminated string");
      if (c === quote) {
        this.#pos++;
        return bytes;
      }
      if (c !== "\\") {
        const codePoint = this.#text.codePointAt(this.#pos)!;
        const char = String.fromCodePoint(codePoint);
        bytes.push(...utf8.encode(char));
        this.#pos += char.length;
        continue;
      }
      this.#pos++;
      bytes.push(...this.#escape());
    }
  }

  /** The bytes of the escape after a backslash. */
  #escape(): number[] {
    const c = this.#text[this.#pos++];
    const simple: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8, f: 12, v: 11, "\\": 92, "'": 39, '"': 34, "?": 63 };
    if (c !== undefined && c in simple) return [simple[c]!];
    if (c !== undefined && /[0-7]/.test(c)) {
      const digits = /^[0-7]{1,2}/.exec(this.#text.slice(this.#pos, this.#pos + 2))?.[0] ?? "";
      this.#pos += digits.length;
      return [Number.parseInt(c + digits, 8) & 0xff];
    }
    if (c === "x" || c === "X") {
      const digits = /^[0-9a-fA-F]{1,2}/.exec(this.#text.slice(this.#pos, this.#pos + 2))?.[0];
      if (digits === undefined) throw new TextFormatError("\\x without hex digits");
      this.#pos += digits.length;
      return [Number.parseInt(digits, 16)];
    }
    if (c === "u" || c === "U") {
      const length = c === "u" ? 4 : 8;
      const digits = this.#text.slice(this.#pos, this.#pos + length);
      if (!/^[0-9a-fA-F]+$/.test(digits) || digits.length !== length) throw new TextFormatError(`bad \\${c} escape`);
      this.#pos += length;
      return [...utf8.encode(String.fromCodePoint(Number.parseInt(digits, 16)))];
    }
    throw new TextFormatError(`unknown escape \\${c}`);
  }
}
