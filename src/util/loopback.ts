/**
 * Whether a host name or address is this machine's loopback: `localhost`, any 127.0.0.0/8 address, or IPv6 `::1` (as
 * a URL's hostname writes it, `[::1]`, or bare, as a listen address). Plain http is accepted only there (RFC 8252
 * section 8.3; OAuth 2.0 Security BCP, RFC 9700 section 2.6), and HMCP's servers bind there by default.
 */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "[::1]" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
