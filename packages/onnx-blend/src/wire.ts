/**
 * Just enough of the protobuf wire format to walk an ONNX file without materialising it: fields
 * are located by offsets into the original bytes, so untouched parts of a model are copied as
 * they are (which is what makes an alpha of 1 reproduce the first model bit for bit).
 */

export const enum Wire {
  Varint = 0,
  Fixed64 = 1,
  Bytes = 2,
  Fixed32 = 5,
}

export interface Field {
  /** Field number. */
  no: number;
  wire: Wire;
  /** Offset of the tag. */
  start: number;
  /** Offset of the value (after the length prefix for length-delimited fields). */
  valueStart: number;
  /** Offset just past the field. */
  end: number;
  /** Varint fields: the value (exact up to 2^53). */
  int: number;
}

export class WireError extends Error {}

export function readVarint(buf: Uint8Array, pos: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw new WireError("truncated varint");
    const byte = buf[pos++]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, pos];
    scale *= 128;
  }
  throw new WireError("varint longer than 10 bytes");
}

/** The fields of one message occupying `buf[start, end)`, in file order. */
export function scanFields(buf: Uint8Array, start = 0, end = buf.length): Field[] {
  const fields: Field[] = [];
  let pos = start;
  while (pos < end) {
    const fieldStart = pos;
    const [tag, afterTag] = readVarint(buf, pos);
    const no = Math.floor(tag / 8);
    const wire = tag % 8;
    let valueStart = afterTag;
    let int = 0;
    switch (wire) {
      case Wire.Varint:
        [int, pos] = readVarint(buf, afterTag);
        break;
      case Wire.Fixed64:
        pos = afterTag + 8;
        break;
      case Wire.Fixed32:
        pos = afterTag + 4;
        break;
      case Wire.Bytes: {
        const [length, afterLength] = readVarint(buf, afterTag);
        valueStart = afterLength;
        pos = afterLength + length;
        break;
      }
      default:
        throw new WireError(`unsupported wire type ${wire} at byte ${fieldStart}`);
    }
    if (pos > end || no === 0) throw new WireError(`malformed field at byte ${fieldStart}`);
    fields.push({ no, wire: wire as Wire, start: fieldStart, valueStart, end: pos, int });
  }
  return fields;
}

export function encodeVarint(value: number): Uint8Array {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Uint8Array.from(out);
}

/** A message being written as a list of byte chunks (mostly views into an input model). */
export class Chunks {
  readonly parts: Uint8Array[] = [];
  length = 0;

  push(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.parts.push(bytes);
    this.length += bytes.length;
  }

  /** A length-delimited field whose value is `value`. */
  pushMessage(no: number, value: Chunks): void {
    this.push(encodeVarint(no * 8 + Wire.Bytes));
    this.push(encodeVarint(value.length));
    for (const part of value.parts) this.push(part);
  }

  pushBytes(no: number, value: Uint8Array): void {
    this.push(encodeVarint(no * 8 + Wire.Bytes));
    this.push(encodeVarint(value.length));
    this.push(value);
  }
}

export function decodeUtf8(buf: Uint8Array, field: Field): string {
  return Buffer.from(buf.buffer, buf.byteOffset + field.valueStart, field.end - field.valueStart).toString("utf8");
}
