import { BlockList, isIP } from "node:net";

/**
 * Loopback, private (RFC 1918, ULA), link-local (cloud metadata at 169.254.169.254), CGNAT,
 * "this network", benchmarking, multicast and reserved ranges: what `private` in
 * WEBHOOK_DENIED_NETWORKS stands for.
 */
const PRIVATE_NETWORKS = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "224.0.0.0/4",
  "240.0.0.0/4",
  "::/128",
  "::1/128",
  "fc00::/7",
  "fe80::/10",
  "ff00::/8",
];

/** Which addresses webhook deliveries may reach. */
export class WebhookAddressPolicy {
  private readonly denied = new BlockList();
  /** False when every address is allowed (the default), so nothing needs resolving. */
  readonly restricted: boolean;

  /** `entries`: WEBHOOK_DENIED_NETWORKS, already split: `private` and/or CIDRs (a bare address is one host). */
  constructor(entries: readonly string[]) {
    const networks = entries.flatMap((e) => (e === "private" ? PRIVATE_NETWORKS : [e]));
    for (const network of networks) {
      const [address = "", prefix] = network.split("/");
      const family = isIP(address) === 6 ? "ipv6" : "ipv4";
      this.denied.addSubnet(address, prefix === undefined ? (family === "ipv6" ? 128 : 32) : Number(prefix), family);
    }
    this.restricted = networks.length > 0;
  }

  /** Whether a delivery may connect to `address` (an IP literal). */
  allows(address: string): boolean {
    if (!this.restricted) return true;
    const family = isIP(address);
    if (family === 0) return false;
    // An IPv4-mapped IPv6 address (::ffff:10.0.0.1) reaches the IPv4 host it wraps.
    const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
    if (mapped) return !this.denied.check(mapped, "ipv4");
    return !this.denied.check(address, family === 6 ? "ipv6" : "ipv4");
  }
}
