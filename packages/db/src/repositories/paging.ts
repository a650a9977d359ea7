export interface PageRequest {
  /** 1-based page number. */
  page: number;
  perPage: number;
  /** Direction on `id` (ids grow with creation time, so this is also creation order). */
  order: "asc" | "desc";
}

export interface Page<T> {
  rows: T[];
  total: number;
}

export function pageArgs(request: PageRequest): { orderBy: { id: "asc" | "desc" }; skip: number; take: number } {
  return { orderBy: { id: request.order }, skip: (request.page - 1) * request.perPage, take: request.perPage };
}
