import { downloadFile, DownloadError } from "@mixdown/downloads";
import { JobFailure } from "@mixdown/jobs";
import { downloadLinkProblem, guardedLookup, type WebhookAddressPolicy } from "@mixdown/webhooks";

/** Where the links a job downloads may lead (WEBHOOK_DENIED_NETWORKS), and how hard to try. */
export interface LinkDownloads {
  policy: WebhookAddressPolicy;
  /** Tries of one download within an attempt (downloadFile's default when absent). */
  attempts?: number;
}

type Log = { info: (o: object, m: string) => void };

/**
 * Downloads a link a job was created with (a voice model's `modelUrl`, a batch's link) into
 * `target`, at most `maxBytes`, under the address policy: every URL requested (redirects too) is
 * checked as the API checks the link at create (downloadLinkProblem), and every host name
 * resolved by the policy's own lookup, so the address checked is the one connected to. A network
 * failure is `transient` (retried); anything else (404, too large, refused) `bad-input`, its
 * message starting with `field`.
 */
export async function downloadLink(
  links: LinkDownloads,
  field: string,
  url: string,
  target: string,
  maxBytes: number,
  log: Log,
  signal: AbortSignal,
): Promise<string> {
  const { policy } = links;
  const problem = downloadLinkProblem(field, url, policy);
  if (problem) throw new JobFailure("bad-input", problem);
  const started = performance.now();
  try {
    const file = await downloadFile({
      url,
      target,
      maxBytes,
      signal,
      ...(links.attempts ? { attempts: links.attempts } : {}),
      ...(policy.restricted ? { lookup: guardedLookup(policy, (message) => new DownloadError(message, "refused")) } : {}),
      checkUrl: (next) => {
        const refused = downloadLinkProblem(field, next.href, policy);
        if (refused)
          throw new DownloadError(next.href === url ? refused : `${url} redirects to ${next.href}: ${refused}`, "refused");
      },
      log: (line) => log.info({ field }, line),
    });
    log.info({ field, bytes: file.sizeBytes, ms: Math.round(performance.now() - started) }, "downloaded");
    return file.path;
  } catch (err) {
    if (err instanceof DownloadError)
      throw new JobFailure(err.reason === "network" ? "transient" : "bad-input", `${field}: ${err.message}`);
    throw err;
  }
}
