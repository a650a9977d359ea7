// Generated from @mixdown/voice's conversion-params and effects-schema (what the API validates
// a voice conversion's controls and effects with): do not edit. Regenerate with `pnpm client:generate`.

/** A numeric effect parameter: its range and default. */
export interface EffectParam {
  min: number;
  max: number;
  default: number;
}

/** An effect's parameters by name. */
export type EffectSpec = Record<string, EffectParam>;

/** conversionStrength, modelVolumeMix and pitchShift: each one's range and default. */
export const CONVERSION_CONTROLS = {
  "conversionStrength": {
    "min": 0,
    "max": 1,
    "default": 0.5
  },
  "modelVolumeMix": {
    "min": 0,
    "max": 1,
    "default": 0.5
  },
  "pitchShift": {
    "min": -24,
    "max": 24,
    "default": 0
  }
} as const;

export type ConversionControlName = keyof typeof CONVERSION_CONTROLS;

/** The effects a conversion's `pre` chain takes, in the order they are offered. */
export const PRE_EFFECTS: Record<string, EffectSpec> = {
  "noiseGate": {
    "threshold_db": {
      "min": -100,
      "max": 0,
      "default": -50
    },
    "ratio": {
      "min": 1,
      "max": 100,
      "default": 10
    },
    "attack_ms": {
      "min": 0.01,
      "max": 1000,
      "default": 1
    },
    "release_ms": {
      "min": 0.01,
      "max": 5000,
      "default": 100
    }
  },
  "compressor": {
    "threshold_db": {
      "min": -60,
      "max": 0,
      "default": -20
    },
    "ratio": {
      "min": 1,
      "max": 20,
      "default": 4
    },
    "attack_ms": {
      "min": 0.01,
      "max": 1000,
      "default": 1
    },
    "release_ms": {
      "min": 0.01,
      "max": 5000,
      "default": 100
    }
  },
  "highPassFilter": {
    "cutoff_frequency_hz": {
      "min": 1,
      "max": 20000,
      "default": 80
    }
  },
  "lowPassFilter": {
    "cutoff_frequency_hz": {
      "min": 1,
      "max": 20000,
      "default": 16000
    }
  }
};

/** The effects a conversion's `post` chain takes, in the order they are offered. */
export const POST_EFFECTS: Record<string, EffectSpec> = {
  "chorus": {
    "rate_hz": {
      "min": 0.01,
      "max": 20,
      "default": 1
    },
    "depth": {
      "min": 0,
      "max": 1,
      "default": 0.25
    },
    "centre_delay_ms": {
      "min": 1,
      "max": 100,
      "default": 7
    },
    "feedback": {
      "min": -0.95,
      "max": 0.95,
      "default": 0
    },
    "mix": {
      "min": 0,
      "max": 1,
      "default": 0.5
    }
  },
  "reverb": {
    "room_size": {
      "min": 0,
      "max": 1,
      "default": 0.5
    },
    "damping": {
      "min": 0,
      "max": 1,
      "default": 0.5
    },
    "wet_level": {
      "min": 0,
      "max": 1,
      "default": 0.33
    },
    "dry_level": {
      "min": 0,
      "max": 1,
      "default": 0.4
    },
    "width": {
      "min": 0,
      "max": 1,
      "default": 1
    },
    "freeze_mode": {
      "min": 0,
      "max": 1,
      "default": 0
    }
  },
  "compressor": {
    "threshold_db": {
      "min": -60,
      "max": 0,
      "default": -20
    },
    "ratio": {
      "min": 1,
      "max": 20,
      "default": 4
    },
    "attack_ms": {
      "min": 0.01,
      "max": 1000,
      "default": 1
    },
    "release_ms": {
      "min": 0.01,
      "max": 5000,
      "default": 100
    }
  },
  "delay": {
    "delay_seconds": {
      "min": 0,
      "max": 10,
      "default": 0.5
    },
    "feedback": {
      "min": 0,
      "max": 0.95,
      "default": 0
    },
    "mix": {
      "min": 0,
      "max": 1,
      "default": 0.5
    }
  }
};
