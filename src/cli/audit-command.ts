// Owned by the audit work (issue 4): `hmcp audit verify|query|export`.
export async function runAuditCommand(_argv: string[], io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  io.err("hmcp audit: not available in this build");
  return 2;
}
