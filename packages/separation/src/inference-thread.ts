// Entry point of the inference thread (see createThreadSession): it owns the onnxruntime
// sessions of the thread that started it and runs them for it, one request at a time.
import { parentPort } from "node:worker_threads";
import { ort } from "./ort.ts";
import { infoOf, runOnce, type InferenceThreadMessage, type InferenceThreadRequest } from "./inference-session.ts";

const port = parentPort!;
const sessions = new Map<number, ort.InferenceSession>();
let nextSession = 0;
const send = (message: InferenceThreadMessage, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

function sessionFor(id: number): ort.InferenceSession {
  const session = sessions.get(id);
  if (!session) throw new Error(`no open session ${id}`);
  return session;
}

port.on("message", async (request: InferenceThreadRequest) => {
  try {
    switch (request.op) {
      case "open": {
        const session = await ort.InferenceSession.create(request.onnxPath, request.options);
        const id = nextSession++;
        sessions.set(id, session);
        send({ id: request.id, op: "opened", session: id, info: infoOf(session) });
        return;
      }
      case "run": {
        const outputs = await runOnce(sessionFor(request.session), request.feeds, request.outputNames);
        send(
          { id: request.id, op: "result", outputs },
          Object.values(outputs).map((output) => output.data.buffer as ArrayBuffer),
        );
        return;
      }
      case "release": {
        const session = sessionFor(request.session);
        sessions.delete(request.session);
        await session.release();
        send({ id: request.id, op: "released" });
        return;
      }
    }
  } catch (err) {
    send({ id: request.id, op: "error", error: (err as Error).message });
  }
});
