import { useEffect, useState } from "preact/hooks";
import type { UsageReport } from "@mixdown/kits-client";
import { kits, unwrap } from "../api.ts";

type UsageKind = UsageReport["kinds"][number]["kind"];

/** Every kind the report lists, by its label (keyed by the document's kinds: a new one does not compile without). */
const KIND_LABELS: Record<UsageKind, string> = {
  vocal_separation: "Vocal separations",
  stem_split: "Stem splits",
  voice_conversion: "Voice conversions",
  voice_blend: "Voice blends",
  tts: "Text to speech",
  audio_analysis: "Audio analyses",
};

/** "42.0 s", "12.5 min". */
export function audioLength(seconds: number): string {
  return seconds < 60 ? `${seconds.toFixed(1)} s` : `${(seconds / 60).toFixed(1)} min`;
}

const currentMonth = () => new Date().toISOString().slice(0, 7);
const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/** The signed-in key's usage in a month, by kind, and its monthly quota (GET /usage). */
export function UsagePage() {
  const [month, setMonth] = useState(currentMonth());
  const [report, setReport] = useState<UsageReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setError(null);
    unwrap(kits.GET("/api/kits/v1/usage", { params: { query: { month } } }))
      .then(setReport)
      .catch((err: Error) => setError(err.message));
  }, [month]);

  const quota = report?.quota;
  return (
    <section>
      <h1>Usage</h1>
      <p>
        Seconds of audio this API key's successful jobs processed, per kind and calendar month (UTC): a separation or conversion
        counts its input's length, text to speech its spoken output's, a blend no audio. Failed and cancelled jobs count nothing.
      </p>
      <label>
        Month{" "}
        <input
          type="month"
          name="month"
          value={month}
          max={currentMonth()}
          onChange={(e) => e.currentTarget.value && setMonth(e.currentTarget.value)}
        />
      </label>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {report && (
        <>
          <p data-testid="usage-summary">
            Key {report.apiKey.prefix}… in {report.month}: <strong>{audioLength(report.total.seconds)}</strong> of audio,{" "}
            {report.total.jobs} {report.total.jobs === 1 ? "job" : "jobs"}.
          </p>
          {quota ? (
            <p data-testid="usage-quota">
              Monthly quota {quota.minutes} min: {audioLength(quota.usedSeconds)} used
              {quota.runningSeconds > 0 ? `, ${audioLength(quota.runningSeconds)} held by running jobs` : ""},{" "}
              <strong>{audioLength(quota.remainingSeconds)} left</strong>; it resets {utc(quota.resetsAt)}.{" "}
              <progress max={quota.minutes * 60} value={Math.min(quota.minutes * 60, quota.usedSeconds + quota.runningSeconds)} />
            </p>
          ) : (
            <p data-testid="usage-quota">This key has no monthly quota.</p>
          )}
          <table class="jobs usage">
            <thead>
              <tr>
                <th scope="col">Kind</th>
                <th scope="col">Audio</th>
                <th scope="col">Jobs</th>
              </tr>
            </thead>
            <tbody>
              {report.kinds.map((k) => (
                <tr key={k.kind} data-kind={k.kind}>
                  <th scope="row">{KIND_LABELS[k.kind]}</th>
                  <td>{audioLength(k.seconds)}</td>
                  <td>{k.jobs}</td>
                </tr>
              ))}
            </tbody>
            <tfoot>
              <tr>
                <th scope="row">Total</th>
                <td>{audioLength(report.total.seconds)}</td>
                <td>{report.total.jobs}</td>
              </tr>
            </tfoot>
          </table>
        </>
      )}
    </section>
  );
}
