/**
 * The value of one sample of a Prometheus text exposition, by metric name and exact label set
 * (undefined when absent): what the metrics tests of the API and the worker read their scrapes with.
 */
export function metricSample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",").filter(Boolean);
    if (have.length === wanted.length && wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}
