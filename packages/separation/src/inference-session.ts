import { threadId, Worker } from "node:worker_threads";
import { ort } from "./ort.ts";
import { siblingModule } from "./sibling-module.ts";
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
  /** the worker_threads id of the thread that runs it (the caller's own for a local session) */
  readonly threadId: number;
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

/**
 * An output's samples as an array the caller owns: onnxruntime-node copies each output into an
 * ArrayBuffer of its own, which is then taken as it is (and can be transferred to another thread);
 * a view into a larger or shared buffer is copied. Copying every output left one garbage buffer per
 * run in the inference thread until its next GC (34-50 MB at the peak of a vocal separation).
 */
function owned(data: Float32Array): Float32Array {
  const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
  return whole && data.buffer instanceof ArrayBuffer ? data : data.slice();
}

/** Runs `session` once; the outputs are arrays the caller owns, the tensors are freed. */
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
      const data = tensor.type === "float32" ? owned(tensor.data as Float32Array) : new Float32Array(0);
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
    threadId,
  };
}

export type InferenceThreadRequest =
  | { id: number; op: "open"; onnxPath: string; options: ort.InferenceSession.SessionOptions }
  | { id: number; op: "run"; session: number; feeds: Record<string, SessionFeed>; outputNames: string[] }
  | { id: number; op: "release"; session: number };

export type InferenceThreadMessage =
  | { id: number; op: "opened"; session: number; info: SessionInfo }
  | { id: number; op: "result"; outputs: Record<string, SessionOutput> }
  | { id: number; op: "released" }
  | { id: number; op: "error"; error: string };

type InferenceThreadAnswer = Extract<InferenceThreadMessage, { op: "opened" | "result" | "released" }>;

/**
 * The thread that runs every session this thread opens with createThreadSession. One thread
 * for all of them, not one each: every thread costs its own V8 isolate (with its own copy of
 * the compiled modules) and its own malloc arena, which keeps what it has freed, and the
 * separations and ensembles run their models one after another, so a thread each bought
 * nothing (the default worker's three models: see docs/benchmarks.md).
 */
class InferenceThread {
  readonly #worker: Worker;
  readonly #requests: ThreadRequests<InferenceThreadMessage, InferenceThreadAnswer>;
  #open = 0;

  constructor() {
    this.#worker = new Worker(siblingModule("./inference-thread", import.meta.url));
    this.#requests = new ThreadRequests<InferenceThreadMessage, InferenceThreadAnswer>(
      this.#worker,
      "inference thread",
      (message) =>
        message.op === "error" ? { id: message.id, error: new Error(message.error) } : { id: message.id, result: message },
    );
  }

  get broken(): Error | undefined {
    return this.#requests.broken;
  }

  #request(message: DistributiveOmit<InferenceThreadRequest, "id">): Promise<InferenceThreadAnswer> {
    return this.#requests.request((id): InferenceThreadRequest => ({ ...message, id }));
  }

  async open(onnxPath: string, options: ort.InferenceSession.SessionOptions): Promise<RunnableSession> {
    this.#open++;
    let opened: InferenceThreadAnswer;
    try {
      opened = await this.#request({ op: "open", onnxPath, options });
    } catch (err) {
      await this.#closed();
      throw err;
    }
    if (opened.op !== "opened") throw new Error(`inference thread: unexpected answer ${opened.op}`);
    const { session, info } = opened;
    const broken = () => this.broken !== undefined;
    let released = false;
    const runMany: RunnableSession["runMany"] = async (feeds, outputNames) => {
      if (released) throw new Error("session released");
      const plain: Record<string, SessionFeed> = {};
      for (const [name, feed] of Object.entries(feeds)) plain[name] = { data: feed.data, dims: [...feed.dims] };
      const answer = await this.#request({ op: "run", session, feeds: plain, outputNames: [...outputNames] });
      if (answer.op !== "result") throw new Error(`inference thread: unexpected answer ${answer.op}`);
      return answer.outputs;
    };
    return {
      ...info,
      run: (inputName, input, dims, outputName) => runSingle(runMany, inputName, input, dims, outputName),
      runMany,
      release: async () => {
        if (released) return;
        released = true;
        if (!this.broken) await this.#request({ op: "release", session }).catch(() => {});
        await this.#closed();
      },
      get unusable() {
        return released || broken();
      },
      threadId: this.#worker.threadId,
    };
  }

  /** One session fewer; the thread ends with its last. */
  async #closed(): Promise<void> {
    if (--this.#open > 0) return;
    for (const [name, thread] of threads) if (thread === this) threads.delete(name);
    this.#requests.fail(new Error("inference thread closed"));
    await this.#worker.terminate();
  }
}

/** This thread's inference threads by name; SHARED is the one its sessions share by default. */
const threads = new Map<string, InferenceThread>();
const SHARED = "";

/**
 * A session on the inference thread this thread shares among its sessions (started with the
 * first, ended with the last), so the calling thread stays free for decoding, the STFT work
 * and encoding while the model runs. Inputs on SharedArrayBuffer memory are read in place;
 * outputs come back as transferred buffers (no copy on this side). A session is unusable
 * once released or once the thread has died (the next session opened starts a new one).
 */
export async function createThreadSession(
  onnxPath: string,
  options: ort.InferenceSession.SessionOptions,
  /** another inference thread than the shared one, by name (sessions naming it share it) */
  threadName: string = SHARED,
): Promise<RunnableSession> {
  let thread = threads.get(threadName);
  if (!thread || thread.broken) threads.set(threadName, (thread = new InferenceThread()));
  return thread.open(onnxPath, options);
}
