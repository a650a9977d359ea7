import { useEffect, useState } from "preact/hooks";
import type { CatalogueModel } from "@mixdown/kits-client";
import { kits, unwrap } from "../api.ts";

const size = (bytes: number | null) => (bytes === null ? "size not published" : `${Math.round(bytes / 1024 / 1024)} MB`);

type Reported = CatalogueModel["reported"][number];

/** The figures grouped by the benchmark they were measured on, in the catalogue's order. */
function byBenchmark(reported: Reported[]): [string, Reported[]][] {
  const groups = new Map<string, Reported[]>();
  for (const r of reported) groups.set(r.benchmark, [...(groups.get(r.benchmark) ?? []), r]);
  return [...groups];
}

/** "MVSep Multisong dataset (per MSST ...)" -> "MVSep Multisong dataset"; the whole text is the row's tooltip. */
const shortLabel = (benchmark: string) => benchmark.split(/ \(|,/)[0];

/** The model catalogue: what this server has installed, and the command that installs the rest. */
export function ModelsPage() {
  const [models, setModels] = useState<CatalogueModel[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    unwrap(kits.GET("/api/kits/v1/model-catalogue"))
      .then((r) => setModels(r.data))
      .catch((err: Error) => setError(err.message));
  }, []);

  return (
    <section>
      <h1>Models</h1>
      <p>
        Published models this server can download, verify and install by name. Install one on the server with the command shown
        (it resumes an interrupted download and checks it against the published hash before converting it); an installed
        separation model can then be named in a job's <code>model</code> field.
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {models && (
        <table class="jobs catalogue">
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">Stems</th>
              <th scope="col">Reported quality</th>
              <th scope="col">Installed</th>
            </tr>
          </thead>
          <tbody>
            {models.map((m) => (
              <tr key={m.name}>
                <td>
                  <strong>{m.name}</strong>
                  <br />
                  <small>
                    {m.description} ({m.family}, {size(m.sizeBytes)}, {m.licence};{" "}
                    <a href={m.source} target="_blank" rel="noreferrer">
                      source
                    </a>
                    )
                  </small>
                </td>
                <td>{m.kind === "voice-asset" ? "RVC voice conversion" : m.stems.join(", ")}</td>
                <td>
                  {m.reported.length === 0
                    ? "-"
                    : byBenchmark(m.reported).map(([benchmark, figures]) => (
                        <div key={benchmark} title={benchmark}>
                          {figures.map((r) => `${r.stem} ${r.value}`).join(" · ")}{" "}
                          <small>
                            ({figures[0]!.metric}, {shortLabel(benchmark)})
                          </small>
                        </div>
                      ))}
                </td>
                <td>{m.installed ? "yes" : <code class="install">{m.install}</code>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
