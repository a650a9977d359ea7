import { PassThrough } from 'node:stream';
import ffmpeg from 'fluent-ffmpeg';
import { AudioDecodeError } from './errors.ts';
import { startFfmpeg } from './ffmpeg-process.ts';

/**
 * Decodes the input once at its own rate and counts the frames: the exact
 * length for lossy inputs, whose containers only give an estimate, and the
 * only one for streams whose container states none. Memory stays flat: the
 * decoded audio is counted as it passes, never kept.
 */
export async function countDecodedFrames(path: string, signal?: AbortSignal): Promise<number> {
  signal?.throwIfAborted();
  const sink = new PassThrough({ autoDestroy: false });
  let bytes = 0;
  sink.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
  });
  // one byte per frame keeps the pipe small
  const command = ffmpeg(path)
    .inputOptions(['-nostdin', '-hide_banner'])
    .outputOptions(['-map', '0:a:0', '-vn', '-sn', '-dn', '-ac', '1', '-c:a', 'pcm_u8'])
    .format('u8')
    .output(sink, { end: true });
  const counter = startFfmpeg(command);
  const onAbort = () => counter.kill();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await counter.exited;
    if (!sink.readableEnded) await new Promise((resolve) => sink.once('end', resolve));
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new AudioDecodeError(path, (err as Error).message, { cause: err });
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  return bytes;
}
