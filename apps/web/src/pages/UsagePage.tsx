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
  vocal_repair: "Vocal repairs",
  mastering: "Masterings",
  harmony: "Harmonies",
  // a pipeline counts no seconds of its own: its steps' jobs count theirs under their kinds
  pipeline: "Pipelines",
};

/** "42.0 s", "12.5 min". */
export function audioLength(seconds: number): string {
  return seconds < 60 ? `${seconds.toFixed(1)} s` : `${(seconds / 60).toFixed(1)} min`;
}

const currentMonth = () => new Date().toISOString().slice(0, 7);
const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/**
 * The signed-in key's usage in a month, by kind, and its monthly quota (GET /usage); for an
 * operator key, every caller's keys too (`all=true`).
 */
export function UsagePage() {
  const [month, setMonth] = useState(currentMonth());
  const [report, setReport] = useState<UsageReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setError(null);
    // The key's own report says whether it is an operator's; only then is every caller's asked for.
    unwrap(kits.GET("/api/kits/v1/usage", { params: { query: { month } } }))
      .then((own) =>
        own.apiKey.operator ? unwrap(kits.GET("/api/kits/v1/usage", { params: { query: { month, all: true } } })) : own,
      )
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
          {report.keys && <EveryKey keys={report.keys} month={report.month} />}
        </>
      )}
    </section>
  );
}

type KeyUsage = NonNullable<UsageReport["keys"]>[number];

/** An operator's view: every caller's keys in the month, revoked ones too. */
function EveryKey({ keys, month }: { keys: KeyUsage[]; month: string }) {
  return (
    <>
      <h2>Every caller in {month}</h2>
      <p class="hint">
        Your key is an operator key: these are all the keys of every caller, as <code>./mixdown.sh keys usage</code> lists them.
      </p>
      <table class="jobs usage every-key">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Caller</th>
            <th scope="col">Audio</th>
            <th scope="col">Jobs</th>
            <th scope="col">Quota</th>
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <tr key={k.apiKeyId} data-key={k.apiKeyId}>
              <th scope="row">
                {k.name}{" "}
                <small>
                  ({k.prefix}…{k.revoked ? ", revoked" : ""})
                </small>
              </th>
              <td>
                {k.callerName} <small>#{k.callerId}</small>
              </td>
              <td>{audioLength(k.seconds)}</td>
              <td>{k.jobs}</td>
              <td>{k.monthlyQuotaMinutes === null ? "none" : `${k.monthlyQuotaMinutes} min`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
