import { useEffect, useRef, useState } from "preact/hooks";
import type { Batch, JobStatusEvent } from "@mixdown/kits-client";
import { cancelBatch, deleteBatch, downloadBatchZip, fetchBatch, followEvents, jobKindOfBatch, listBatches } from "../api.ts";
import { navigate } from "../main.tsx";
import { StatusBadge } from "../components/StatusBadge.tsx";

const PER_PAGE = 20;
const KIND_LABELS: Record<Batch["kind"], string> = { "vocal-separation": "Vocal separation", "stem-split": "Stem split" };

/**
 * Reads `read()` again whenever the caller's event stream says one of `jobIds()`'s jobs changed
 * (at most once a second), or every 2 s without the stream, while `running()`.
 */
function useFollowed(read: () => void, jobIds: () => Set<number>, running: boolean): void {
  const [polling, setPolling] = useState(false);
  const pending = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => {
    if (!running) return;
    const stop = followEvents("/api/kits/v1/events", {
      event: (event) => {
        if (event.event === "resync") return read();
        if (event.event !== "status" || !jobIds().has((event.data as JobStatusEvent).id)) return;
        pending.current ??= setTimeout(() => {
          pending.current = undefined;
          read();
        }, 1000);
      },
      fallBack: () => setPolling(true),
    });
    return () => {
      stop();
      clearTimeout(pending.current);
      pending.current = undefined;
    };
  }, [running]);
  useEffect(() => {
    if (!running || !polling) return;
    const timer = setInterval(read, 2000);
    return () => clearInterval(timer);
  }, [running, polling]);
}

/** One batch: its progress, its jobs (each a link to its own page), the files it refused, its zip. */
export function BatchPage({ id }: { id: number }) {
  const [batch, setBatch] = useState<Batch | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const read = () =>
    void fetchBatch(id).then(
      (b) => {
        setBatch(b);
        setError(null);
      },
      (err: Error) => setError(err.message),
    );
  useEffect(read, [id]);
  const ids = useRef(new Set<number>());
  ids.current = new Set(batch?.jobs.map((j) => j.id) ?? []);
  useFollowed(read, () => ids.current, batch?.status === "running");

  const act = (work: () => Promise<unknown>) => async () => {
    setBusy(true);
    try {
      await work();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  if (!batch) return <section>{error ? <p class="error">{error}</p> : <p>Loading…</p>}</section>;
  const kind = jobKindOfBatch(batch);
  const ended = batch.total - batch.counts.running;
  return (
    <section class="batch">
      <h1>
        Batch {batch.id}: {KIND_LABELS[batch.kind].toLowerCase()} of {batch.total} file{batch.total === 1 ? "" : "s"}
      </h1>
      <p class="job-status" role="status" aria-live="polite">
        <StatusBadge job={batch} /> {ended} of {batch.total} ended: {batch.counts.success} succeeded
        {batch.counts.error > 0 && `, ${batch.counts.error} failed`}
        {batch.counts.cancelled > 0 && `, ${batch.counts.cancelled} cancelled`}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <p class="actions">
        {batch.zipUrl && (
          <button type="button" disabled={busy} onClick={act(() => downloadBatchZip(batch))}>
            Download zip
          </button>
        )}{" "}
        {batch.status === "running" && (
          <button
            type="button"
            class="secondary"
            disabled={busy}
            onClick={act(async () => setBatch(await cancelBatch(batch.id)))}
          >
            Cancel batch
          </button>
        )}{" "}
        <button
          type="button"
          class="secondary"
          disabled={busy}
          onClick={act(async () => {
            if (!confirm(`Delete batch ${batch.id}, its ${batch.total} jobs and their files?`)) return;
            await deleteBatch(batch.id);
            navigate("#/batches");
          })}
        >
          Delete
        </button>
      </p>
      <table class="jobs">
        <thead>
          <tr>
            <th>File</th>
            <th>Job</th>
            <th>Status</th>
          </tr>
        </thead>
        <tbody>
          {batch.jobs.map((job) => (
            <tr key={job.id}>
              <td>{job.fileName ?? "(no name)"}</td>
              <td>
                <a href={`#/jobs/${kind}/${job.id}`}>
                  {KIND_LABELS[batch.kind]} {job.id}
                </a>
              </td>
              <td>
                <StatusBadge job={job} />
                {job.errorMessage && <small class="error"> {job.errorMessage}</small>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {batch.rejected.length > 0 && (
        <>
          <h2>Files that made no job</h2>
          <ul class="rejected">
            {batch.rejected.map((r, i) => (
              <li key={i}>
                {r.fileName ?? "(no name)"}: {r.reason}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** The caller's batches, newest first. */
export function BatchesPage({ page }: { page: number }) {
  const [data, setData] = useState<Awaited<ReturnType<typeof listBatches>> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const read = () =>
    void listBatches(page, PER_PAGE).then(
      (d) => {
        setData(d);
        setError(null);
      },
      (err: Error) => setError(err.message),
    );
  useEffect(read, [page]);
  const ids = useRef(new Set<number>());
  ids.current = new Set(data?.data.flatMap((b) => b.jobs.map((j) => j.id)) ?? []);
  useFollowed(read, () => ids.current, data?.data.some((b) => b.status === "running") ?? false);
  const lastPage = data ? Math.max(1, Math.ceil(data.meta.total / PER_PAGE)) : 1;
  return (
    <section>
      <h1>Batches</h1>
      <p class="hint">
        Choose or drop several files in a <a href="#/new/vocal-separations">vocal separation</a> or{" "}
        <a href="#/new/stem-splits">stem split</a> form: one batch, a job each, and one zip of every output.
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {data && data.data.length === 0 && <p>No batches yet.</p>}
      {data && data.data.length > 0 && (
        <table class="jobs">
          <thead>
            <tr>
              <th>Batch</th>
              <th>Files</th>
              <th>Status</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {data.data.map((b) => (
              <tr key={b.id}>
                <td>
                  <a href={`#/batches/${b.id}`}>
                    {KIND_LABELS[b.kind]} batch {b.id}
                  </a>
                </td>
                <td>{b.total}</td>
                <td>
                  <StatusBadge job={b} />
                </td>
                <td>{b.createdAt.slice(0, 19)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {lastPage > 1 && (
        <nav class="pager" aria-label="Pages">
          {page > 1 && <a href={`#/batches?page=${page - 1}`}>Newer</a>} Page {page} of {lastPage}{" "}
          {page < lastPage && <a href={`#/batches?page=${page + 1}`}>Older</a>}
        </nav>
      )}
    </section>
  );
}
