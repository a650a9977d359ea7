// The ensemble algorithms' names live with the job catalogue (what a separation job may ask
// for); the engine's own view of an ensemble is here.
export {
  DEFAULT_ENSEMBLE,
  ENSEMBLE_ALGORITHMS,
  isEnsembleAlgorithm,
  parseModelList,
  type EnsembleAlgorithm,
} from "@mixdown/jobs";

/** One stem an ensemble writes, and the stem of each member (in the members' order) it combines. */
export interface EnsembleStem {
  name: string;
  from: string[];
}
