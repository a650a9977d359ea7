import { createHash } from "node:crypto";
import { readFile, stat, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after } from "node:test";
import { fileURLToPath } from "node:url";
import { uvrModelHash } from "@mixdown/downloads";

// A model mirror for the tests of pulls and installs (`models pull`, the worker's model installs,
// the dashboard's): a catalogue whose entries point at public origins, and a local HTTP server
// that serves their paths (reached through MIXDOWN_MODEL_MIRROR). Never shipped.

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

export const vocals = await readFile(join(repoRoot, "models/vocals.onnx"));
export const rmvpe = await readFile(join(repoRoot, "packages/voice/test/fixtures/rmvpe/rmvpe-random.onnx"));
export const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
/**
 * The files a mirror serves, by path. `holdFirst` sends the first request for that path 1 MB and
 * then nothing more, holding the connection open until the client goes (a download stalled, for a
 * test that kills the downloading process). `cutFirst` drops the first request for that path after 1 MB,
 * once the client has written that much to `cutPartial` (so the cut falls exactly there).
 */
export async function mirror(
  files: Record<string, Buffer>,
  options: { cutFirst?: string; cutPartial?: string; noRange?: boolean; holdFirst?: string } = {},
) {
  const seen: { path: string; range?: string }[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url!;
    seen.push({ path, ...(req.headers.range ? { range: req.headers.range } : {}) });
    const file = files[path];
    if (!file) return res.writeHead(404).end();
    const first = seen.filter((s) => s.path === path).length === 1;
    if (options.holdFirst === path && first) {
      res.writeHead(200, { "Content-Length": file.length, ETag: '"1"' });
      res.write(file.subarray(0, 1024 * 1024));
      return;
    }
    if (options.cutFirst === path && first) {
      res.writeHead(200, { "Content-Length": file.length, ETag: '"1"' });
      res.write(file.subarray(0, 1024 * 1024));
      const deadline = Date.now() + 20_000;
      const cut = async () => {
        const size = await stat(options.cutPartial ?? "").then(
          (st) => st.size,
          () => 0,
        );
        if (size >= 1024 * 1024 || Date.now() > deadline) res.socket?.destroy();
        else setTimeout(cut, 10);
      };
      void cut();
      return;
    }
    const range = options.noRange ? null : /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    if (range) {
      const start = Number(range[1]);
      res.writeHead(206, {
        "Content-Range": `bytes ${start}-${file.length - 1}/${file.length}`,
        "Content-Length": file.length - start,
        ETag: '"1"',
      });
      return res.end(file.subarray(start));
    }
    res.writeHead(200, { "Content-Length": file.length, ETag: '"1"' }).end(file);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  after(() => new Promise<void>((r) => server.close(() => r())));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** A catalogue of two entries pointing at a public origin: reached only through MIXDOWN_MODEL_MIRROR. */
export async function catalogue(dir: string, vocalsSha = sha(vocals)): Promise<string> {
  const path = join(dir, "catalogue.json");
  const file = {
    version: 1,
    models: [
      {
        name: "Test_Vocal",
        kind: "separation",
        family: "mdx",
        stems: ["vocals"],
        description: "the default vocals network, published as an MDX-Net ONNX for this test",
        importFile: "Test_Vocal.onnx",
        mdx: { nFft: 4096, dimF: 1024, dimT: 256, compensate: 1, primaryStem: "vocals" },
        files: [
          {
            name: "Test_Vocal.onnx",
            url: "https://models.example.org/uvr/Test_Vocal.onnx",
            sizeBytes: vocals.length,
            sha256: vocalsSha,
            uvrHash: await uvrModelHash(join(repoRoot, "models/vocals.onnx")),
          },
        ],
        licence: "MIT",
        source: "https://models.example.org/",
        reported: [{ stem: "vocals", metric: "SDR", value: 7.9, benchmark: "the recipe's held-out set", source: "test" }],
        evidence: ["this test"],
      },
      {
        name: "rmvpe",
        kind: "voice-asset",
        family: "rmvpe",
        description: "a random-weight RMVPE model (packages/voice/test/fixtures/rmvpe)",
        importFile: "rmvpe.onnx",
        files: [
          {
            name: "rmvpe.onnx",
            url: "https://hf.example.org/lj1995/resolve/main/rmvpe.onnx",
            sizeBytes: null,
            sha256: sha(rmvpe),
          },
        ],
        licence: "MIT",
        source: "https://hf.example.org/",
        reported: [],
        evidence: ["this test"],
      },
    ],
  };
  await writeFile(path, JSON.stringify(file));
  return path;
}

export const files = { "/uvr/Test_Vocal.onnx": vocals, "/lj1995/resolve/main/rmvpe.onnx": rmvpe };
