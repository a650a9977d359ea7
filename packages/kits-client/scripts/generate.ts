// `pnpm --filter @mixdown/kits-client generate`: src/schema.ts from openapi.json (which
// `pnpm --filter @mixdown/api openapi` writes; `pnpm client:generate` runs both), and
// src/controls.ts from the voice conversion's definitions.
import { writeFile } from "node:fs/promises";
import { CONTROLS_PATH, renderControls, renderSchema, SCHEMA_PATH } from "./schema.ts";

await writeFile(SCHEMA_PATH, await renderSchema());
console.log(`wrote ${SCHEMA_PATH}`);
await writeFile(CONTROLS_PATH, renderControls());
console.log(`wrote ${CONTROLS_PATH}`);
