// Owned by the guardrails work (issue 7): `hmcp guardrails eval`.
export async function runGuardrailsCommand(_argv: string[], io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  io.err("hmcp guardrails: not available in this build");
  return 2;
}
