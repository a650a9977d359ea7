/** `2026-11-22 09:41:07.123000 +00:00`: the interface's timestamp format (JS dates carry milliseconds). */
export function formatTimestamp(date: Date): string;
export function formatTimestamp(date: Date | null): string | null;
export function formatTimestamp(date: Date | null): string | null {
  if (!date) return null;
  const iso = date.toISOString(); // 2026-11-22T09:41:07.123Z
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}000 +00:00`;
}
