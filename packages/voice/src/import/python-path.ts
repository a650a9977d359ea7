import { fileURLToPath } from "node:url";

/**
 * `packages/voice/python`, the PYTHONPATH of the converters that turn a user's PyTorch files into
 * ONNX. A module of its own, so that what imports it (the API, identifying an upload) loads
 * nothing else.
 */
export const VOICE_PYTHON_PATH = fileURLToPath(new URL("../../python", import.meta.url));
