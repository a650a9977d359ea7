import type { EffectSpec } from "@mixdown/kits-client";

export type Chain = Record<string, Record<string, number>>;

const words = (name: string) =>
  name
    .replace(/([A-Z])/g, " $1")
    .replace(/_/g, " ")
    .toLowerCase();

/** The effects of a `pre` or `post` chain: each one on or off, with every parameter in its range. */
export function EffectChain(props: {
  legend: string;
  id: string;
  effects: Record<string, EffectSpec>;
  value: Chain;
  onChange(chain: Chain): void;
}) {
  const { effects, value } = props;
  const set = (effect: string, params: Record<string, number> | null) => {
    const next: Chain = {};
    // The chain applies effects in key order: keep the order of `effects`.
    for (const name of Object.keys(effects)) {
      const current = name === effect ? params : value[name];
      if (current) next[name] = current;
    }
    props.onChange(next);
  };
  return (
    <fieldset class="effects">
      <legend>{props.legend}</legend>
      {Object.entries(effects).map(([effect, spec]) => {
        const on = value[effect];
        const defaults = Object.fromEntries(Object.entries(spec).map(([p, s]) => [p, s.default]));
        return (
          <div class="effect" key={effect}>
            <label>
              <input
                type="checkbox"
                name={`${props.id}-${effect}`}
                checked={Boolean(on)}
                onChange={(e) => set(effect, e.currentTarget.checked ? defaults : null)}
              />
              {words(effect)}
            </label>
            {on && (
              <div class="params">
                {Object.entries(spec).map(([param, range]) => (
                  <label key={param}>
                    {words(param)}{" "}
                    <small>
                      ({range.min} to {range.max})
                    </small>
                    <input
                      type="number"
                      name={`${props.id}-${effect}-${param}`}
                      min={range.min}
                      max={range.max}
                      step="any"
                      required
                      value={on[param]}
                      onInput={(e) => set(effect, { ...on, [param]: e.currentTarget.valueAsNumber })}
                    />
                  </label>
                ))}
              </div>
            )}
          </div>
        );
      })}
    </fieldset>
  );
}
