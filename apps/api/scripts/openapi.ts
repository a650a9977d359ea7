// `pnpm --filter @mixdown/api openapi`: writes the API's OpenAPI document where
// @mixdown/kits-client is generated from (`pnpm client:generate` does both steps).
import { writeFile } from "node:fs/promises";
import { KITS_CLIENT_OPENAPI_PATH, renderOpenApiDocument } from "../src/openapi-document.ts";

await writeFile(KITS_CLIENT_OPENAPI_PATH, await renderOpenApiDocument());
console.log(`wrote ${KITS_CLIENT_OPENAPI_PATH}`);
