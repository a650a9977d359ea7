// Entry point of the helper thread that does the STFT work (see
// HelperThreadStft). It only ever touches SharedArrayBuffer views it is sent.
import { setPriority } from "node:os";
import { parentPort } from "node:worker_threads";
import { MdxStft, type MdxStftConfig } from "./stft.ts";
import type { StftHelperRequest, StftHelperResponse } from "./helper-thread-stft.ts";

/** Linux nice value of this thread (setpriority on thread id 0 is this thread only). */
const STFT_THREAD_NICE = 10;

const port = parentPort!;
try {
  setPriority(0, STFT_THREAD_NICE);
} catch {
  // not permitted here: run at the normal priority
}
const instances = new Map<string, Promise<MdxStft>>();

function stftFor(config: MdxStftConfig & { fft: "auto" | "js" }): Promise<MdxStft> {
  const key = `${config.nFft}/${config.hopLength}/${config.dimF}/${config.dimT}/${config.fft}`;
  let stft = instances.get(key);
  if (!stft) {
    stft = MdxStft.create(config, { fft: config.fft });
    instances.set(key, stft);
  }
  return stft;
}

port.on("message", async (request: StftHelperRequest) => {
  let response: StftHelperResponse;
  try {
    const stft = await stftFor(request.config);
    if (request.op === "analyze") {
      stft.analyze(request.left, request.right, request.offset, request.spec, request.specOffset);
    } else {
      request.accLeft.fill(0);
      request.accRight.fill(0);
      stft.synthesizeFrames(request.spec, request.specOffset, request.accLeft, request.accRight);
    }
    response = { id: request.id };
  } catch (err) {
    response = { id: request.id, error: (err as Error).message };
  }
  port.postMessage(response);
});
