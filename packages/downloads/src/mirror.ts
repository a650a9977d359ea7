/**
 * `MIXDOWN_MODEL_MIRROR`: the same file from another origin. The mirror's base replaces the URL's
 * origin and the path is kept, so `https://dl.fbaipublicfiles.com/demucs/x.th` under the mirror
 * `file:///srv/models` is `file:///srv/models/demucs/x.th` (query strings are dropped: they belong
 * to the origin).
 */
export function withMirror(url: string, mirror: string | undefined): string {
  if (mirror === undefined || mirror.trim() === "") return url;
  const base = new URL(mirror.endsWith("/") ? mirror : `${mirror}/`);
  return new URL(new URL(url).pathname.replace(/^\/+/, ""), base).href;
}
