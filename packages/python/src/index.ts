export {
  ensurePyTorch,
  ImportProblem,
  lastJsonLine,
  pythonCommand,
  PYTORCH_APT_PACKAGES,
  runProcess,
  runPythonModule,
  type PythonModuleRun,
  type RunResult,
} from "./runtime.ts";
export { isTensorInfo, isZipFile, pickledGlobalName, readTorchFile, TorchFileError, type TensorInfo } from "./torch-file.ts";
