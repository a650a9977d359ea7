// The layering rules of docs/ARCHITECTURE.md that hold for every import, type-only imports
// included (a type import couples two modules as much as a value import does). What a process
// loads at run time is checked by `.dependency-cruiser.runtime.cjs`; `pnpm deps:check`
// (scripts/check-layering.mjs) runs both and checks each import's declaration in package.json.
// The suite runs it, and breaks every rule once to show that each is enforced
// (apps/cli/test/layering.test.ts).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "apps-above-packages",
      comment: "A package never imports an app: dependencies point one way, apps -> packages.",
      severity: "error",
      from: { path: "^packages/" },
      to: { path: "^apps/" },
    },
    {
      name: "apps-apart",
      comment:
        "An app's code never imports another app's (they meet over HTTP, the queue and the database); tests may start one beside the other.",
      severity: "error",
      from: { path: "^apps/([^/]+)/(src|scripts)/" },
      to: { path: "^apps/", pathNot: "^apps/$1/" },
    },
    {
      name: "web-through-typed-client",
      comment: "The web app speaks to the API only through the typed client, @mixdown/kits-client.",
      severity: "error",
      from: { path: "^apps/web/src/" },
      to: { path: "^(apps|packages)/", pathNot: "^(apps/web|packages/kits-client)/" },
    },
    {
      name: "config-is-a-leaf",
      comment:
        "@mixdown/config imports no workspace package but the job catalogue (@mixdown/jobs, itself without dependencies) and @mixdown/schema-check (TypeBox only): every process reads its settings from it.",
      severity: "error",
      from: { path: "^packages/config/src/" },
      to: { path: "^(apps|packages)/", pathNot: "^packages/(config|jobs|schema-check)/" },
    },
    {
      name: "jobs-is-a-leaf",
      comment: "@mixdown/jobs, the job catalogue, imports no other workspace package.",
      severity: "error",
      from: { path: "^packages/jobs/src/" },
      to: { path: "^(apps|packages)/", pathNot: "^packages/jobs/" },
    },
    {
      name: "inference-without-http-or-database",
      comment:
        "The audio and inference packages never import HTTP, queue or database code: the apps hand them files and settings.",
      severity: "error",
      from: { path: "^packages/(audio|analysis|repair|mastering|harmony|separation|voice|onnx-blend)/src/" },
      to: {
        path: [
          "^packages/(db|queue|storage|records|webhooks)/",
          "node_modules/(fastify|@fastify|bullmq|ioredis|@prisma|@aws-sdk)/",
        ],
      },
    },
    {
      name: "database-without-inference",
      comment: "The database package never imports an audio or inference package (the apps hand it what it stores).",
      severity: "error",
      from: { path: "^packages/db/src/" },
      to: {
        path: [
          "^packages/(audio|analysis|repair|mastering|harmony|separation|voice|onnx-blend)/",
          "node_modules/onnxruntime-node/",
        ],
      },
    },
    {
      name: "scripts-stay-home",
      comment: "Nothing outside a folder's scripts/ imports them: what others need lives in src/.",
      severity: "error",
      from: { path: "^((apps|packages)/[^/]+)/" },
      to: { path: "(^|/)scripts/", pathNot: "^$1/scripts/" },
    },
    {
      name: "tests-are-not-imported",
      comment: "No source or script imports from a test/ folder: what both need lives in src/.",
      severity: "error",
      from: { path: "(^|/)(src|scripts)/" },
      to: { path: "(^|/)test/" },
    },
    {
      name: "no-unresolvable",
      comment: "Every import resolves (a path typo or a missing package fails here before it fails at run time).",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    doNotFollow: { path: "(^|/)node_modules/" },
    // Build outputs mirror the sources; only the sources are read.
    exclude: { path: "^(apps|packages)/[^/]+/dist/" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs", ".json"],
      mainFields: ["module", "main", "types"],
    },
  },
};
