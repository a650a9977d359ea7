import { useEffect, useRef, useState } from "preact/hooks";
import type { JobStatusEvent } from "@mixdown/kits-client";
import { cancelJob, followEvents, listJobs, withStatus, type AnyJob, type JobPage as Page } from "../api.ts";
import { JOB_KINDS, KINDS } from "../kinds/index.ts";
import { StatusBadge } from "../components/StatusBadge.tsx";

const PER_PAGE = 10;

/** Every job of every kind, newest first, kept current by the caller's event stream while it is shown. */
export function JobsPage({ page }: { page: number }) {
  const [data, setData] = useState<(Page & { truncated: boolean }) | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    let stopped = false;
    listJobs(JOB_KINDS, page, PER_PAGE)
      .then((result) => {
        if (stopped) return;
        setData(result);
        setError(null);
      })
      .catch((err: Error) => !stopped && setError(err.message));
    return () => {
      stopped = true;
    };
  }, [page, tick]);

  // The caller's event stream pushes every job's changes: a row's progress is updated in place; a
  // job that ends, or starts and is not shown yet, reads the page again. Polling only without it.
  const [polling, setPolling] = useState(false);
  const shownRows = useRef<AnyJob[] | undefined>(undefined);
  shownRows.current = data?.rows;
  useEffect(
    () =>
      followEvents("/api/kits/v1/events", {
        event: (event) => {
          if (event.event === "resync") return setTick((t) => t + 1);
          if (event.event !== "status") return;
          const change = event.data as JobStatusEvent;
          const shown = (row: AnyJob) => row.kind === change.kind && row.job.id === change.id;
          const found = shownRows.current?.some(shown) ?? false;
          if (change.status !== "running" || (!found && change.progress <= 1)) setTick((t) => t + 1);
          else if (found)
            setData((now) => now && { ...now, rows: now.rows.map((row) => (shown(row) ? withStatus(row, change) : row)) });
        },
        fallBack: () => setPolling(true),
      }),
    [],
  );
  const running = data?.rows.some((r) => r.job.status === "running") ?? false;
  useEffect(() => {
    if (!running || !polling) return;
    const timer = setTimeout(() => setTick((t) => t + 1), 1500);
    return () => clearTimeout(timer);
  }, [running, polling, data]);

  const lastPage = data ? Math.max(1, Math.ceil(data.total / PER_PAGE)) : 1;
  const cancel = async (row: AnyJob) => {
    try {
      await cancelJob(row.kind, row.job.id);
    } catch (err) {
      setError((err as Error).message);
    }
    setTick((t) => t + 1);
  };

  return (
    <section>
      <h1>Jobs</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {data && data.rows.length === 0 && (
        <p>
          No jobs yet. <a href="#/new/vocal-separations">Start one.</a>
        </p>
      )}
      {data && data.rows.length > 0 && (
        <table class="jobs">
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Created (UTC)</th>
              <th scope="col">Status</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {data.rows.map((row) => (
              <tr key={`${row.kind}-${row.job.id}`}>
                <td>
                  <a href={`#/jobs/${row.kind}/${row.job.id}`}>
                    {KINDS[row.kind].label} #{row.job.id}
                  </a>
                </td>
                <td>{row.job.createdAt.slice(0, 19)}</td>
                <td>
                  <StatusBadge job={row.job} />
                  {row.job.errorMessage && <p class="error small">{row.job.errorMessage}</p>}
                </td>
                <td>
                  {row.job.status === "running" && (
                    <button type="button" class="small" onClick={() => void cancel(row)}>
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data && lastPage > 1 && (
        <nav class="pager" aria-label="Pages">
          {page > 1 ? <a href={`#/jobs?page=${page - 1}`}>← Newer</a> : <span />}
          <span>
            Page {page} of {lastPage}
          </span>
          {page < lastPage && !data.truncated ? <a href={`#/jobs?page=${page + 1}`}>Older →</a> : <span />}
        </nav>
      )}
    </section>
  );
}
