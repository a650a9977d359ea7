import { createHash } from "node:crypto";
import { copyFile, mkdir, rm } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { SingleBar } from "cli-progress";
import {
  downloadsDir,
  fetchVerified,
  importSeparation,
  PullProblem,
  type MdxGeometry,
  type PullContext,
  type PullProgress,
} from "@mixdown/model-catalogue/pull";

// The pull itself (download, verify, install) is `@mixdown/model-catalogue/pull`, which the
// worker's model installs run too; what is the command line's own is here.

const MB = 1024 * 1024;
const megabytes = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;

/** Shows one download's progress: a bar with bytes, rate and ETA on a terminal, else a line every 10 %. */
export function progressReporter(tty: boolean, log: (line: string) => void): (label: string) => PullProgress {
  return (label) => {
    if (tty) {
      const bar = new SingleBar({
        format: `${label} [{bar}] {percentage}% {got}/{size} {rate} ETA {eta_formatted}`,
        hideCursor: true,
        stream: process.stderr,
        barsize: 24,
      });
      let started = false;
      const startedAt = Date.now();
      return {
        update(p) {
          const total = p.total ?? Math.max(p.received, 1);
          const seconds = (Date.now() - startedAt) / 1000;
          const rate = seconds > 0 ? `${megabytes((p.received - p.resumedFrom) / seconds)}/s` : "";
          const payload = { got: megabytes(p.received), size: p.total ? megabytes(p.total) : "?", rate };
          if (!started) {
            bar.start(total, p.received, payload);
            started = true;
          } else {
            bar.setTotal(total);
            bar.update(p.received, payload);
          }
        },
        stop: () => started && bar.stop(),
      };
    }
    let nextTenth = 0;
    return {
      update(p) {
        if (p.total === undefined) return;
        const tenth = Math.floor((p.received / p.total) * 10);
        if (tenth < nextTenth) return;
        nextTenth = tenth + 1;
        log(`${label}: ${megabytes(p.received)} of ${megabytes(p.total)} (${tenth * 10} %)`);
      },
      stop: () => {},
    };
  };
}

/** `models pull URL`: any file, checked against `--sha256` when given, with its config from a URL or a file. */
export async function pullUrl(
  url: string,
  options: { sha256?: string; config?: string; name?: string; mdx: MdxGeometry; modelData?: string },
  ctx: PullContext,
): Promise<string> {
  if (options.sha256 !== undefined && !/^[0-9a-fA-F]{64}$/.test(options.sha256))
    throw new PullProblem(`--sha256 takes 64 hex digits, got ${JSON.stringify(options.sha256)}`);
  const staging = join(downloadsDir(ctx.modelsDir), `url-${createHash("sha256").update(url).digest("hex").slice(0, 12)}`);
  await mkdir(staging, { recursive: true });
  const name = decodeURIComponent(basename(new URL(url).pathname)) || "model";
  // The mirror stands in for the catalogue's origins, not for an address the person typed.
  ctx = { ...ctx, mirror: undefined };
  const file = await fetchVerified(url, staging, name, { sha256: options.sha256 ?? null }, ctx);
  if (options.sha256 === undefined) ctx.log(`no --sha256 given: pin it next time with --sha256 ${file.sha256}`);
  let config: string | undefined;
  if (options.config !== undefined) {
    if (/^https?:\/\//.test(options.config)) {
      const configName = decodeURIComponent(basename(new URL(options.config).pathname)) || "config.yaml";
      config = (await fetchVerified(options.config, staging, configName, {}, ctx)).path;
    } else {
      config = join(staging, basename(options.config));
      await copyFile(resolve(options.config), config);
    }
  }
  const summary = await importSeparation(file.path, config, options.name, options.mdx, ctx, options.modelData);
  await rm(staging, { recursive: true, force: true });
  return summary;
}
