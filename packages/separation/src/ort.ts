/**
 * onnxruntime-node, as every Mixdown module that creates a session imports it: with onnxruntime's
 * telemetry off. The Linux build of onnxruntime 1.30 starts Microsoft's 1DS telemetry client when
 * it creates its environment (the first session of a process): it writes a device id (`.ses`) and
 * an empty `mat-debug-<pid>.log` into the temporary directory, one per process, never removed, so
 * a service that restarts its workers piles them up, and a self-hosted service has no business
 * keeping a telemetry id. `ORT_DISABLE_TELEMETRY=1` turns the client off; it is read when that
 * environment is created, which is after this module runs (sessions are only created later). An
 * operator who sets the variable themselves keeps their value. It takes effect only when this
 * module runs on a process's main thread: a worker thread's `process.env` is its own copy and does
 * not reach the process's environment, which onnxruntime reads; a process whose sessions are all
 * created in threads imports this module on its main thread first (the worker's main.ts does).
 */
import * as ort from "onnxruntime-node";

process.env.ORT_DISABLE_TELEMETRY ??= "1";

export { ort };
