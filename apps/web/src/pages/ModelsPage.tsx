import { useEffect, useState } from "preact/hooks";
import type { CatalogueModel, ModelInstall } from "@mixdown/kits-client";
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

/** How often a running install is read again (the dashboard polls, as a Kits client does). */
const POLL_MS = 1000;

/**
 * The model catalogue: what this server has installed, and for the rest the command that installs
 * it; an operator key installs it from here (a job the workers run, its progress polled).
 */
export function ModelsPage() {
  const [models, setModels] = useState<CatalogueModel[] | null>(null);
  const [canInstall, setCanInstall] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    unwrap(kits.GET("/api/kits/v1/model-catalogue"))
      .then((r) => {
        setModels(r.data);
        setCanInstall(r.canInstall);
      })
      .catch((err: Error) => setError(err.message));
  }, [tick]);

  return (
    <section>
      <h1>Models</h1>
      <p>
        Published models this server can download, verify and install by name. Install one on the server with the command shown
        (it resumes an interrupted download and checks it against the published hash before converting it); an installed
        separation model can then be named in a job's <code>model</code> field.
        {canInstall &&
          " Your key is an operator key: Install runs the same download, checks and install on a worker, and shows its progress here."}
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
              <tr key={m.name} data-model={m.name}>
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
                <td>
                  {m.installed ? (
                    "yes"
                  ) : canInstall ? (
                    <InstallCell model={m} onInstalled={() => setTick((t) => t + 1)} />
                  ) : (
                    <code class="install">{m.install}</code>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** An operator's Install button, then the install's progress until it ends (polled). */
function InstallCell({ model, onInstalled }: { model: CatalogueModel; onInstalled(): void }) {
  const [install, setInstall] = useState<ModelInstall | null>(model.lastInstall);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (install?.status !== "running") return;
    const timer = setTimeout(() => {
      unwrap(kits.GET("/api/kits/v1/model-installs/{id}", { params: { path: { id: install.id } } }))
        .then((next) => {
          setInstall(next);
          if (next.status === "success") onInstalled();
        })
        .catch((err: Error) => setError(err.message));
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [install]);
  const start = async () => {
    setError(null);
    try {
      setInstall(await unwrap(kits.POST("/api/kits/v1/model-installs", { body: { name: model.name } })));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <div class="install-cell" role="status" aria-live="polite" aria-label={`Install of ${model.name}`}>
      {install?.status === "running" ? (
        <>
          <span class="status running">installing {install.progress}%</span>{" "}
          <progress max={100} value={install.progress} aria-label={`${model.name} install progress`} />
        </>
      ) : (
        <button type="button" class="small" onClick={() => void start()} aria-label={`Install ${model.name}`}>
          Install
        </button>
      )}
      {install?.status === "error" && <p class="error small">Last install failed: {install.errorMessage}</p>}
      {error && <p class="error small">{error}</p>}
      <br />
      <small>
        or on the server: <code class="install">{model.install}</code>
      </small>
    </div>
  );
}
