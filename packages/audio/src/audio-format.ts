import { open } from "node:fs/promises";

/** The audio containers an upload may be: what the API accepts and the CLI's `separate` picks from a folder. */
export type AudioFormat = "wav" | "mp3" | "flac" | "webm";

/** The media type each format is stored and served as. */
export const AUDIO_CONTENT_TYPES: Record<AudioFormat, string> = {
  wav: "audio/wav",
  mp3: "audio/mpeg",
  flac: "audio/flac",
  webm: "audio/webm",
};

/** What the first bytes say; `id3` is an ID3v2 tag, which may front mp3 (usually) or flac. */
export type SniffResult = AudioFormat | "id3" | "matroska" | null;

function ascii(bytes: Buffer, start: number, length: number): string {
  return bytes.subarray(start, start + length).toString("latin1");
}

/** An MPEG audio frame header: 11 set sync bits, a valid version, layer, bitrate and sample rate. */
function isMpegFrame(b: Buffer, i = 0): boolean {
  if (b.length < i + 4 || b[i] !== 0xff || (b[i + 1]! & 0xe0) !== 0xe0) return false;
  const version = (b[i + 1]! >> 3) & 3;
  const layer = (b[i + 1]! >> 1) & 3;
  const bitrate = b[i + 2]! >> 4;
  const sampleRate = (b[i + 2]! >> 2) & 3;
  return version !== 1 && layer !== 0 && bitrate !== 15 && sampleRate !== 3;
}

/** EBML DocType ("webm" or "matroska") from the EBML header at the start of the file. */
function ebmlDocType(b: Buffer): string | null {
  // The DocType element id is 0x4282, followed by a 1-byte-length VINT (0x80 | length) and the string.
  for (let i = 4; i < Math.min(b.length - 3, 128); i++) {
    if (b[i] === 0x42 && b[i + 1] === 0x82) {
      const sizeByte = b[i + 2]!;
      if ((sizeByte & 0x80) === 0) return null;
      const length = sizeByte & 0x7f;
      return ascii(b, i + 3, length).replace(/\0+$/, "");
    }
  }
  return null;
}

/**
 * The audio container the bytes start with (magic numbers), whatever the file is called:
 * RIFF/RF64 + WAVE, fLaC, ID3 or an MPEG frame sync, EBML with a webm DocType.
 */
export function sniffAudioFormat(head: Buffer): SniffResult {
  if (head.length < 4) return null;
  const magic = ascii(head, 0, 4);
  if ((magic === "RIFF" || magic === "RF64") && ascii(head, 8, 4) === "WAVE") return "wav";
  if (magic === "fLaC") return "flac";
  if (ascii(head, 0, 3) === "ID3") return "id3";
  if (isMpegFrame(head)) return "mp3";
  if (head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) {
    const docType = ebmlDocType(head);
    if (docType === "webm") return "webm";
    if (docType === "matroska") return "matroska";
  }
  return null;
}

/** How many leading bytes `sniffAudioFormat` needs at most (an EBML header's DocType is within them). */
export const SNIFF_BYTES = 4096;

/** `sniffAudioFormat` of a file's first bytes: reads SNIFF_BYTES, never the whole file. */
export async function sniffAudioFile(path: string): Promise<SniffResult> {
  const file = await open(path, "r");
  try {
    const head = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await file.read(head, 0, SNIFF_BYTES, 0);
    return sniffAudioFormat(head.subarray(0, bytesRead));
  } finally {
    await file.close();
  }
}
