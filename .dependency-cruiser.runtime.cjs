// The layering rules about what a process loads when it runs: type-only imports are left out
// (TypeScript elides them), every other import followed to the end. See .dependency-cruiser.cjs.
const base = require("./.dependency-cruiser.cjs");

const onnxruntime = "(^|/)node_modules/onnxruntime-node/";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "api-without-onnxruntime",
      comment:
        "The API never loads onnxruntime: nothing it imports at run time may reach onnxruntime-node (the worker and the import converters run models).",
      severity: "error",
      from: { path: "^apps/api/src/" },
      to: { path: onnxruntime, reachable: true },
    },
    {
      name: "web-without-onnxruntime",
      comment: "The web app never loads onnxruntime (nor anything that would).",
      severity: "error",
      from: { path: "^apps/web/src/" },
      to: { path: onnxruntime, reachable: true },
    },
  ],
  options: { ...base.options, tsPreCompilationDeps: false },
};
