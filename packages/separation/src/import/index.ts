// `@mixdown/separation/import`: turning a model file a user owns into an installed model.
export { importModel, defaultModelName, type ImportModelOptions, type ImportedModel } from "./import-model.ts";
export { quantizeInstalledModel, quantizeLinearLayersInt8, type QuantizedGraph, type QuantizedModel } from "./quantize.ts";
export {
  identifyModelFile,
  uvrModelHash,
  readYamlFile,
  ImportProblem,
  type IdentifiedModel,
  type ImportFamily,
  type MdxGeometry,
} from "./identify.ts";
export { readTorchFile, TorchFileError, pickledGlobalName, isTensorInfo, type TensorInfo } from "@mixdown/python";
export { ensurePyTorch, pythonCommand, PYTORCH_APT_PACKAGES } from "@mixdown/python";
