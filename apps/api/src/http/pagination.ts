export interface ListParams {
  order: "asc" | "desc";
  page: number;
  perPage: number;
}

export interface PaginationMeta {
  currentPage: number;
  firstPage: number;
  firstPageUrl: string;
  lastPage: number;
  lastPageUrl: string;
  nextPageUrl: string | null;
  perPage: number;
  previousPageUrl: string | null;
  total: number;
}

/**
 * The interface's pagination meta. Page URLs are relative paths that keep the caller's
 * `perPage`, `order` and any extra filters; lastPage is at least 1, and a page past the last
 * one is answered with empty data and this same arithmetic.
 */
export function paginationMeta(
  path: string,
  params: ListParams,
  total: number,
  extra: Record<string, string> = {},
): PaginationMeta {
  const lastPage = Math.max(1, Math.ceil(total / params.perPage));
  const url = (page: number) => {
    const query = new URLSearchParams({ page: String(page), perPage: String(params.perPage), order: params.order, ...extra });
    return `${path}?${query.toString()}`;
  };
  return {
    currentPage: params.page,
    firstPage: 1,
    firstPageUrl: url(1),
    lastPage,
    lastPageUrl: url(lastPage),
    nextPageUrl: params.page < lastPage ? url(params.page + 1) : null,
    perPage: params.perPage,
    previousPageUrl: params.page > 1 ? url(params.page - 1) : null,
    total,
  };
}
