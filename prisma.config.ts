import { defineConfig } from "prisma/config";

// `prisma generate` needs no database; `prisma migrate deploy` reads DATABASE_URL.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://localhost:5432/mixdown" },
});
