import {
  documentedEffectName,
  EffectChainError,
  parseEffectChain as parseChain,
  POST_EFFECTS,
  PRE_EFFECTS,
  type EffectChain,
} from "@mixdown/voice/effects-schema";
import { unprocessable } from "../../http/errors.ts";

// One catalogue for validation here and the ffmpeg filters in the worker (@mixdown/voice).
export { documentedEffectName, POST_EFFECTS, PRE_EFFECTS, type EffectChain };

/** Parses `pre` or `post` (see @mixdown/voice/effects-schema); a bad chain is a 422 naming the effect or parameter. */
export function parseEffectChain(field: "pre" | "post", raw: string | undefined): EffectChain {
  try {
    return parseChain(field, raw);
  } catch (err) {
    if (err instanceof EffectChainError) throw unprocessable(err.message);
    throw err;
  }
}
