import { Type, type TSchema } from "typebox";

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** `YYYY-MM-DD HH:MM:SS.ffffff +00:00` */
export const Timestamp = Type.String({
  description: "UTC timestamp, `YYYY-MM-DD HH:MM:SS.ffffff +00:00`",
  examples: ["2026-11-22 09:41:07.123000 +00:00"],
});

export const SignedUrl = Nullable(
  Type.String({ description: "Signed download URL (expires after SIGNED_URL_TTL_SECONDS); null until the file exists" }),
);

export const JobStatus = Type.Union(
  [Type.Literal("running"), Type.Literal("success"), Type.Literal("error"), Type.Literal("cancelled")],
  { description: "`running` (queued or being processed), `success`, `error`, `cancelled`" },
);

export const PaginationMeta = Type.Object({
  currentPage: Type.Integer(),
  firstPage: Type.Integer(),
  firstPageUrl: Type.String(),
  lastPage: Type.Integer(),
  lastPageUrl: Type.String(),
  nextPageUrl: Nullable(Type.String()),
  perPage: Type.Integer(),
  previousPageUrl: Nullable(Type.String()),
  total: Type.Integer(),
});
