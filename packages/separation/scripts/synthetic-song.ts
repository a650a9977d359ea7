import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
/** Where the benches keep their generated inputs between runs. */
export const BENCH_CACHE = join(tmpdir(), "mixdown-bench");

/**
 * A song-like synthetic mix without downloads: an espeak-ng voice (pitched
 * and looped), a bass line, chords and a noise hi-hat, 44.1 kHz stereo s16.
 */
export async function syntheticSong(seconds: number): Promise<string> {
  await mkdir(BENCH_CACHE, { recursive: true });
  const path = join(BENCH_CACHE, `song-${seconds}s.wav`);
  if (existsSync(path)) return path;
  const voice = join(BENCH_CACHE, "voice.wav");
  if (!existsSync(voice)) {
    await run("espeak-ng", [
      "-v",
      "en-us+f3",
      "-s",
      "140",
      "-p",
      "60",
      "-w",
      voice,
      "la la la, oh the night is long and the road goes on, we sing along until the morning comes, hey hey",
    ]);
  }
  const tmp = `${path}.tmp.wav`;
  await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-stream_loop",
    "-1",
    "-i",
    voice,
    "-f",
    "lavfi",
    "-i",
    `aevalsrc=0.25*sin(2*PI*(55*pow(2\\,floor(mod(t\\,8)/2)/12))*t)*(0.6+0.4*sin(2*PI*2*t)):s=44100:d=${seconds}`,
    "-f",
    "lavfi",
    "-i",
    `aevalsrc=0.06*(sin(2*PI*261.6*t)+sin(2*PI*329.6*t)+sin(2*PI*392*t))*(0.8+0.2*sin(2*PI*0.25*t)):s=44100:d=${seconds}`,
    "-f",
    "lavfi",
    "-i",
    `anoisesrc=c=white:r=44100:d=${seconds}:a=0.3`,
    "-filter_complex",
    [
      `[0]aresample=44100,asetrate=44100*1.12,aresample=44100,volume=1.6,atrim=end=${seconds},pan=stereo|c0=c0|c1=c0[v]`,
      "[1]pan=stereo|c0=c0|c1=c0[b]",
      "[2]pan=stereo|c0=0.7*c0|c1=c0[c]",
      "[3]highpass=f=7000,volume='if(lt(mod(t,0.25),0.03),1,0)':eval=frame,pan=stereo|c0=c0|c1=0.6*c0[h]",
      "[v][b][c][h]amix=inputs=4:normalize=0:duration=shortest,alimiter=limit=0.9",
    ].join(";"),
    "-t",
    String(seconds),
    "-c:a",
    "pcm_s16le",
    tmp,
  ]);
  await run("mv", [tmp, path]);
  return path;
}
