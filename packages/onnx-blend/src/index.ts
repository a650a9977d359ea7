export {
  blendOnnxModels,
  IncompatibleModelsError,
  InvalidModelError,
  type BlendInput,
  type BlendOptions,
  type BlendResult,
} from "./blend.ts";
export { parseOnnx, type OnnxModel, type Initializer } from "./model.ts";
