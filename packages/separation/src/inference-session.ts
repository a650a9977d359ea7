import { Worker } from "node:worker_threads";
import * as ort from "onnxruntime-node";
import { ThreadRequests, type DistributiveOmit } from "./thread-requests.ts";

/** What a family model needs of a session, wherever it runs. */
export interface SessionInfo {
  inputNames: readonly string[];
  outputNames: readonly string[];
  inputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  outputMetadata: readonly ort.InferenceSession.ValueMetadata[];
}

export interface SessionOutput {
  data: Float32Array;
  dims: readonly number[];
  type: string;
}

export interface RunnableSession extends SessionInfo {
  /** runs with one float32 input and returns one output, copied out of onnxruntime */
  run(inputName: string, input: Float32Array, dims: readonly number[], outputName: string): Promise<SessionOutput>;
  release(): Promise<void>;
  /** true once the session cannot run any more (released, or its thread died) */
  readonly unusable: boolean;
}

/** The parts of a session's description a family model reads, as plain (cloneable) data. */
export function infoOf(session: ort.InferenceSession): SessionInfo {
  return {
    inputNames: [...session.inputNames],
    outputNames: [...session.outputNames],
    inputMetadata: [...session.inputMetadata],
    outputMetadata: [...session.outputMetadata],
  };
}

/** Runs `session` once; the output is a copy the caller owns, the tensor is freed. */
export async function runOnce(
  session: ort.InferenceSession,
  inputName: string,
  input: Float32Array,
  dims: readonly number[],
  outputName: string,
): Promise<SessionOutput> {
  const result = await session.run({ [inputName]: new ort.Tensor("float32", input, dims) });
  const tensor = result[outputName];
  try {
    const data = tensor.type === "float32" ? (tensor.data as Float32Array).slice() : new Float32Array(0);
    return { data, dims: [...tensor.dims], type: tensor.type };
  } finally {
    for (const value of Object.values(result)) value.dispose();
  }
}

/**
 * A session on the calling thread. onnxruntime-node runs inference
 * synchronously on the thread that calls run (behind a setImmediate), so this
 * thread does nothing else meanwhile: no I/O, no STFT.
 */
export async function createLocalSession(
  onnxPath: string,
  options: ort.InferenceSession.SessionOptions,
): Promise<RunnableSession> {
  const session = await ort.InferenceSession.create(onnxPath, options);
  let released = false;
  return {
    ...infoOf(session),
    run: (inputName, input, dims, outputName) => runOnce(session, inputName, input, dims, outputName),
    release: () => {
      released = true;
      return session.release();
    },
    get unusable() {
      return released;
    },
  };
}

export type InferenceThreadRequest =
  | { id: number; op: "run"; inputName: string; input: Float32Array; dims: number[]; outputName: string }
  | { id: number; op: "release" };

export type InferenceThreadMessage =
  | { op: "ready"; info: SessionInfo }
  | { op: "failed"; error: string }
  | { id: number; op: "result"; output: SessionOutput }
  | { id: number; op: "error"; error: string };

/**
 * A session owned by a thread of its own, so the calling thread stays free
 * for decoding, the STFT work and encoding while the model runs. Inputs on
 * SharedArrayBuffer memory are read in place; outputs come back as
 * transferred buffers (no copy on this side).
 */
export async function createThreadSession(
  onnxPath: string,
  options: ort.InferenceSession.SessionOptions,
): Promise<RunnableSession> {
  const worker = new Worker(new URL("./inference-thread.ts", import.meta.url), { workerData: { onnxPath, options } });
  let onError: (err: Error) => void = () => {};
  let onExit: (code: number) => void = () => {};
  let onMessage: (message: InferenceThreadMessage) => void = () => {};
  const info = await new Promise<SessionInfo>((resolve, reject) => {
    onError = reject;
    onExit = (code) => reject(new Error(`inference thread exited with code ${code}`));
    onMessage = (message) => {
      if (message.op === "ready") resolve(message.info);
      else reject(new Error(message.op === "failed" ? message.error : `unexpected message ${message.op}`));
    };
    worker.on("error", onError).on("exit", onExit).on("message", onMessage);
  })
    .catch(async (err: Error) => {
      await worker.terminate();
      throw err;
    })
    .finally(() => {
      // (not removeAllListeners: the Worker's own listeners start its message port)
      worker.off("error", onError).off("exit", onExit).off("message", onMessage);
    });
  const requests = new ThreadRequests<InferenceThreadMessage, SessionOutput>(worker, "inference thread", (message) => {
    if (!("id" in message)) return undefined;
    if (message.op === "result") return { id: message.id, result: message.output };
    return { id: message.id, error: new Error(message.op === "error" ? message.error : "unexpected message") };
  });

  const request = (message: DistributiveOmit<InferenceThreadRequest, "id">) =>
    requests.request((id): InferenceThreadRequest => ({ ...message, id }));
  return {
    ...info,
    run: (inputName, input, dims, outputName) => request({ op: "run", inputName, input, dims: [...dims], outputName }),
    release: async () => {
      if (!requests.broken) await request({ op: "release" }).catch(() => {});
      requests.fail(new Error("session released"));
      await worker.terminate();
    },
    get unusable() {
      return requests.broken !== undefined;
    },
  };
}
