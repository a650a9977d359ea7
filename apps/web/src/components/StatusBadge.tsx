import type { AnyJob } from "../api.ts";

/** A job's (or a batch's) status, with its progress while it runs. */
export function StatusBadge({ job }: { job: Pick<AnyJob["job"], "status" | "progress"> }) {
  return (
    <span class={`status ${job.status}`}>
      {job.status === "running" ? (
        <>
          running{" "}
          <progress max={100} value={job.progress} aria-label="Progress">
            {job.progress}%
          </progress>{" "}
          <span class="percent">{job.progress}%</span>
        </>
      ) : (
        job.status
      )}
    </span>
  );
}
