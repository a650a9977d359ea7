import { useEffect, useState } from "preact/hooks";
import type { JobStatusEvent } from "@mixdown/kits-client";
import { cancelJob, deleteJob, fetchJob, followEvents, jobOfKind, withStatus, type AnyJob, type JobKind } from "../api.ts";
import { StatusBadge } from "../components/StatusBadge.tsx";
import { KINDS, type KindView } from "../kinds/index.ts";

/** One job: its status while it runs, then a player per output. */
export function JobPage({ kind, id }: { kind: JobKind; id: number }) {
  const [current, setCurrent] = useState<AnyJob | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopEvents: (() => void) | undefined;
    // Polling is the fallback only: while the job runs its changes are pushed (followEvents).
    const poll = async () => {
      try {
        const next = await fetchJob(kind, id);
        if (stopped) return;
        setCurrent(next);
        setError(null);
        if (next.job.status === "running") timer = setTimeout(poll, 1000);
      } catch (err) {
        if (!stopped) setError((err as Error).message);
      }
    };
    const follow = () => {
      stopEvents = followEvents(
        `/api/kits/v1/${kind}/${id}/events`,
        {
          event: (event) => {
            if (stopped) return;
            if (event.event === "record") setCurrent(jobOfKind(kind, event.data));
            else if (event.event === "status") setCurrent((now) => (now ? withStatus(now, event.data as JobStatusEvent) : now));
          },
          fallBack: () => void (stopped || poll()),
        },
        "record",
      );
    };
    fetchJob(kind, id)
      .then((first) => {
        if (stopped) return;
        setCurrent(first);
        setError(null);
        if (first.job.status === "running") follow();
      })
      .catch((err: Error) => !stopped && setError(err.message));
    return () => {
      stopped = true;
      clearTimeout(timer);
      stopEvents?.();
    };
  }, [kind, id]);

  const cancel = async () => {
    try {
      setCurrent(await cancelJob(kind, id));
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const remove = async () => {
    const running = current?.job.status === "running";
    const question = `Delete ${KINDS[kind].label} #${id} and all its files for good?${running ? " It is still running: it will be cancelled first." : ""}`;
    if (!window.confirm(question)) return;
    try {
      await deleteJob(kind, id);
      location.hash = "#/jobs";
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const job = current?.job;
  return (
    <section>
      <p>
        <a href="#/jobs">← Jobs</a>
      </p>
      <h1>
        {KINDS[kind].label} #{id}
      </h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {job && (
        <div class="job-status" role="status" aria-live="polite">
          <StatusBadge job={job} />
          {job.status === "running" && (
            <button type="button" class="small" onClick={() => void cancel()}>
              Cancel
            </button>
          )}
          <button type="button" class="small danger" onClick={() => void remove()}>
            Delete
          </button>
          {job.errorMessage && <p class="error">{job.errorMessage}</p>}
        </div>
      )}
      {current && <Detail current={current} />}
      {current && current.job.status === "success" && <Outputs current={current} />}
    </section>
  );
}

/** What a finished job shows: its kind's view of its outputs. */
function Outputs({ current }: { current: AnyJob }) {
  const { Outputs: View } = KINDS[current.kind] as KindView<JobKind>;
  return <View job={current.job} />;
}

/** What a kind shows at every status (a pipeline's steps), when it has such a view. */
function Detail({ current }: { current: AnyJob }) {
  const { Detail: View } = KINDS[current.kind] as KindView<JobKind>;
  return View ? <View job={current.job} /> : null;
}
