export { buildApp, type App, type AppDeps } from "./app.ts";
export { API_PREFIX, type AppContext } from "./app-context.ts";
export { formatTimestamp } from "@mixdown/records";
export { sniffAudioFormat, type AudioFormat } from "./uploads/audio-format.ts";
