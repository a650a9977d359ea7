// Entry point of a model's inference thread (see createThreadSession): it owns
// one onnxruntime session and runs it for the thread that created it.
import { parentPort, workerData } from "node:worker_threads";
import * as ort from "onnxruntime-node";
import { infoOf, runOnce, type InferenceThreadMessage, type InferenceThreadRequest } from "./inference-session.ts";

const port = parentPort!;
const { onnxPath, options } = workerData as { onnxPath: string; options: ort.InferenceSession.SessionOptions };
const send = (message: InferenceThreadMessage, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

async function serve(): Promise<void> {
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(onnxPath, options);
  } catch (err) {
    // the creator terminates this thread once it has read the reason
    send({ op: "failed", error: (err as Error).message });
    return;
  }
  send({ op: "ready", info: infoOf(session) });

  port.on("message", async (request: InferenceThreadRequest) => {
    try {
      if (request.op === "release") {
        await session.release();
        send({ id: request.id, op: "result", outputs: {} });
        return;
      }
      const outputs = await runOnce(session, request.feeds, request.outputNames);
      send(
        { id: request.id, op: "result", outputs },
        Object.values(outputs).map((output) => output.data.buffer as ArrayBuffer),
      );
    } catch (err) {
      send({ id: request.id, op: "error", error: (err as Error).message });
    }
  });
}

void serve();
