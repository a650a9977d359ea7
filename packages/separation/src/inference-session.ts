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

/** One float32 input of a run, by input name. */
export interface SessionFeed {
  data: Float32Array;
  dims: readonly number[];
}

export interface RunnableSession extends SessionInfo {
  /** runs with one float32 input and returns one output, copied out of onnxruntime */
  run(inputName: string, input: Float32Array, dims: readonly number[], outputName: string): Promise<SessionOutput>;
  /** runs with any number of float32 inputs and returns the named outputs, each copied out of onnxruntime */
  runMany(feeds: Readonly<Record<string, SessionFeed>>, outputNames: readonly string[]): Promise<Record<string, SessionOutput>>;
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

/** Runs `session` once; the outputs are copies the caller owns, the tensors are freed. */
export async function runOnce(
  session: ort.InferenceSession,
  feeds: Readonly<Record<string, SessionFeed>>,
  outputNames: readonly string[],
): Promise<Record<string, SessionOutput>> {
  const tensors: Record<string, ort.Tensor> = {};
  for (const [name, feed] of Object.entries(feeds)) tensors[name] = new ort.Tensor("float32", feed.data, feed.dims);
  const result = await session.run(tensors, [...outputNames]);
  try {
    const outputs: Record<string, SessionOutput> = {};
    for (const name of outputNames) {
      const tensor = result[name];
      if (!tensor) throw new Error(`the model has no output "${name}"`);
      const data = tensor.type === "float32" ? (tensor.data as Float32Array).slice() : new Float32Array(0);
      outputs[name] = { data, dims: [...tensor.dims], type: tensor.type };
    }
    return outputs;
  } finally {
    for (const value of Object.values(result)) value.dispose();
  }
}

/** The one-input, one-output form of `runMany`, for the graphs most families export. */
async function runSingle(
  runMany: RunnableSession["runMany"],
  inputName: string,
  input: Float32Array,
  dims: readonly number[],
  outputName: string,
): Promise<SessionOutput> {
  const outputs = await runMany({ [inputName]: { data: input, dims } }, [outputName]);
  return outputs[outputName];
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
  const runMany: RunnableSession["runMany"] = (feeds, outputNames) => runOnce(session, feeds, outputNames);
  return {
    ...infoOf(session),
    run: (inputName, input, dims, outputName) => runSingle(runMany, inputName, input, dims, outputName),
    runMany,
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
  { id: number; op: "run"; feeds: Record<string, SessionFeed>; outputNames: string[] } | { id: number; op: "release" };

export type InferenceThreadMessage =
  | { op: "ready"; info: SessionInfo }
  | { op: "failed"; error: string }
  | { id: number; op: "result"; outputs: Record<string, SessionOutput> }
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
  const requests = new ThreadRequests<InferenceThreadMessage, Record<string, SessionOutput>>(
    worker,
    "inference thread",
    (message) => {
      if (!("id" in message)) return undefined;
      if (message.op === "result") return { id: message.id, result: message.outputs };
      return { id: message.id, error: new Error(message.op === "error" ? message.error : "unexpected message") };
    },
  );

  const request = (message: DistributiveOmit<InferenceThreadRequest, "id">) =>
    requests.request((id): InferenceThreadRequest => ({ ...message, id }));
  const runMany: RunnableSession["runMany"] = (feeds, outputNames) => {
    const plain: Record<string, SessionFeed> = {};
    for (const [name, feed] of Object.entries(feeds)) plain[name] = { data: feed.data, dims: [...feed.dims] };
    return request({ op: "run", feeds: plain, outputNames: [...outputNames] });
  };
  return {
    ...info,
    run: (inputName, input, dims, outputName) => runSingle(runMany, inputName, input, dims, outputName),
    runMany,
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
