import type { Redis } from "ioredis";

export interface WindowCount {
  /** Requests counted in the current window, this one included. */
  count: number;
  /** Milliseconds until the window resets. */
  resetInMs: number;
}

// Fixed one-minute windows per key and bucket: INCR, start the window's expiry on its first hit.
const HIT = `
local count = redis.call("INCR", KEYS[1])
local ttl = redis.call("PTTL", KEYS[1])
if ttl < 0 then
  redis.call("PEXPIRE", KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { count, ttl }`;

/** Request counters in Redis, shared by every API process. */
export class RateLimitRepository {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async hit(bucket: string, subject: string, windowMs: number): Promise<WindowCount> {
    const key = `${this.prefix}:ratelimit:${bucket}:${subject}`;
    const [count, ttl] = (await this.redis.eval(HIT, 1, key, String(windowMs))) as [number, number];
    return { count, resetInMs: ttl };
  }
}
