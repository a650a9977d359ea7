import type { Job } from "bullmq";
import type { Logger } from "pino";

/**
 * Turns a thread's progress fractions into the row's and the BullMQ job's `progress`: 1..90 while
 * the audio work runs (uploading takes the rest), written in steps of 5 at most, one write at a
 * time. A failed write is logged, never fatal. `flush()` waits for the last write.
 */
export function progressReporter(job: Job, setRowProgress: (percent: number) => Promise<void>, log: Logger) {
  let reported = 1;
  let writes = Promise.resolve();
  return {
    report(fraction: number): void {
      const percent = Math.max(1, Math.min(90, Math.round(fraction * 90)));
      if (percent < reported + 5) return;
      reported = percent;
      writes = writes
        .then(() => Promise.all([setRowProgress(percent), job.updateProgress(percent)]))
        .then(
          () => undefined,
          (err: Error) => log.warn({ err }, "progress update failed"),
        );
    },
    flush(): Promise<void> {
      return writes;
    },
  };
}
