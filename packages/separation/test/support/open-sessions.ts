// Creates and releases a session of the model named by argv[2] on this thread and one on the
// inference thread, as the worker does, then ends (ort-telemetry.test.ts runs it in a fresh TMPDIR).
import { createLocalSession, createThreadSession } from "../../src/inference-session.ts";

const model = process.argv[2]!;
const local = await createLocalSession(model, {});
const threaded = await createThreadSession(model, {});
await local.release();
await threaded.release();
