import helmet from "@fastify/helmet";
import type { FastifyInstance, FastifyRequest } from "fastify";

/**
 * The browser-facing security headers, on every response (@fastify/helmet): `nosniff`,
 * `frame-ancestors 'none'` / `X-Frame-Options`, no referrer across origins, and a
 * Content-Security-Policy that lets the dashboard (and `/docs`) run only scripts served from this
 * origin. Stored audio and images are fetched from `storageOrigin`, the origin of the storage's
 * signed URLs (this origin for local disk; the S3 endpoint, or S3_PUBLIC_ENDPOINT, otherwise), so
 * `img-src`, `media-src` and `connect-src` name it and nothing else.
 *
 * Left off on purpose:
 * - `Strict-Transport-Security`: Mixdown speaks plain HTTP; whatever terminates TLS in front of
 *   it owns HSTS (a year-long HSTS sent over a LAN name would lock browsers out of it).
 * - `Cross-Origin-Resource-Policy`: a signed file URL is meant to be played or downloaded from a
 *   caller's own pages on another origin; the signature, not the origin, guards it.
 */
export async function registerSecurityHeaders(app: FastifyInstance, storageOrigin: string): Promise<void> {
  const storage = [storageOrigin];
  await app.register(helmet, {
    global: true,
    strictTransportSecurity: false,
    crossOriginResourcePolicy: false,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        // Preact and wavesurfer set element styles at run time; no style can run code.
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", "data:", "blob:", ...storage],
        mediaSrc: ["'self'", "blob:", ...storage],
        // blob: the dashboard previews a file the user picked (wavesurfer fetches its object URL)
        connectSrc: ["'self'", "blob:", ...storage],
        fontSrc: ["'self'", "data:"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
  });
}

/** Query parameters that are credentials: a signed URL's signature (ours, and S3's). */
const SECRET_QUERY = /([?&](?:signature|X-Amz-Signature|X-Amz-Security-Token)=)[^&#]*/gi;

/**
 * What a request log line says of the request: Fastify's default fields, with the signature of a
 * signed file URL masked (a log line must not be a working download link). Headers are never
 * logged, so neither is the `Authorization` key.
 */
export const requestLogSerializers = {
  req(request: FastifyRequest) {
    return {
      method: request.method,
      url: request.url.replace(SECRET_QUERY, "$1[redacted]"),
      host: request.host,
      remoteAddress: request.ip,
      remotePort: request.socket?.remotePort,
    };
  },
};
