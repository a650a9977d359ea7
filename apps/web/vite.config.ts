import { defineConfig } from "vite";

export default defineConfig({
  // Served by the API process at `/`; `vite` (dev) forwards API calls to a running `mixdown up`.
  base: "/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { target: "es2022", outDir: "dist", emptyOutDir: true, reportCompressedSize: false },
  server: {
    proxy: Object.fromEntries(
      ["/api", "/dashboard", "/files", "/docs"].map((p) => [p, process.env.MIXDOWN_URL ?? "http://127.0.0.1:8080"]),
    ),
  },
});
