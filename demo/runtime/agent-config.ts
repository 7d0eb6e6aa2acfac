/**
 * Configuration handed to an agent process started over stdio (`--transport stdio`), in the environment
 * variable HMCP_DEMO_AGENT_CONFIG (JSON). Over stdio there is no HTTP auth: the agent runs under `principal`.
 */
import { appendFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { appendAnchorFile, FileAuditSink, generateAuditSigningKey, type Principal } from "hmcp";

export const AGENT_CONFIG_ENV = "HMCP_DEMO_AGENT_CONFIG";

const ConfigSchema = z.strictObject({
  store: z.union([z.strictObject({ dataDir: z.string() }), z.strictObject({ databaseUrl: z.string() })]).optional(),
  dataDir: z.string().optional(),
  audit: z.strictObject({ dir: z.string(), prefix: z.string(), anchors: z.string().optional() }).optional(),
  principal: z.strictObject({
    clientId: z.string(),
    sub: z.string().optional(),
    scopes: z.array(z.string()),
    patient: z.string().optional(),
    fhirUser: z.string().optional(),
    tenant: z.string().optional(),
  }),
  requireApproval: z.boolean().optional(),
});
export type AgentProcessConfig = z.infer<typeof ConfigSchema>;

/** Reads and checks the configuration. @throws Error naming the variable and the bad key. */
export function readAgentConfig(env: NodeJS.ProcessEnv = process.env): AgentProcessConfig {
  const raw = env[AGENT_CONFIG_ENV];
  if (!raw) throw new Error(`${AGENT_CONFIG_ENV} is not set: this agent is started by the demo (npm run demo -- --transport stdio)`);
  const parsed = ConfigSchema.safeParse(JSON.parse(raw));
  if (!parsed.success) throw new Error(`${AGENT_CONFIG_ENV}: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
}

/** Public checkpoint key file of the chain `prefix` in `dir`. */
export const publicKeyFileFor = (dir: string, prefix: string) => path.join(dir, `${prefix}.pub.jwk`);


/**
 * Opens this process's audit chain. The checkpoint signing key is generated here and never leaves the process;
 * its public half is appended next to the chain (`<prefix>.pub.jwk`, one JWK per line) for verification. With `audit.anchors`, each
 * checkpoint's anchor is appended to that file (`appendAnchorFile`).
 */
export async function openAgentAudit(cfg: AgentProcessConfig): Promise<FileAuditSink | undefined> {
  if (!cfg.audit) return undefined;
  const key = await generateAuditSigningKey();
  // appended, one JWK per line: a chain continued by a later process of the same agent (the SDK's stdio start, a
  // restart) holds checkpoints signed with each process's key, and every one must stay verifiable
  await appendFile(publicKeyFileFor(cfg.audit.dir, cfg.audit.prefix), `${JSON.stringify(key.publicJwk)}\n`);
  return FileAuditSink.open({
    dir: cfg.audit.dir,
    prefix: cfg.audit.prefix,
    signing: { privateKey: key.privateJwk },
    durability: { mode: "group", intervalMs: 5, maxRecords: 256 },
    ...(cfg.audit.anchors !== undefined && { onCheckpoint: appendAnchorFile(cfg.audit.anchors) }),
  });
}

export const principalOf = (cfg: AgentProcessConfig): Principal => cfg.principal;

/** The configuration of one agent instance over HTTP (`--instances`, demo/runtime/instance-agent.ts), as JSON in this variable. */
export const INSTANCE_CONFIG_ENV = "HMCP_DEMO_INSTANCE_CONFIG";

/** What {@link INSTANCE_CONFIG_ENV} holds. */
export const InstanceConfigSchema = z.strictObject({
  agent: z.enum(["emr-writeback", "patient-data"]),
  /** This instance's id: its audit chain's name, e.g. `emr-writeback-1`. */
  instanceId: z.string().regex(/^[A-Za-z0-9_-]+$/),
  /** The shared PostgreSQL. */
  databaseUrl: z.string(),
  /** The resource identifier clients get tokens for: the proxy's `/mcp` URL. */
  resource: z.string().url(),
  issuer: z.string().url(),
  jwksUri: z.string().url(),
  /** The requestState sealing key every instance shares (>= 32 bytes). */
  requestStateKey: z.string().min(32),
  /** Synthea bundles (the patient-data agent's index). */
  dataDir: z.string(),
  audit: z.strictObject({ dir: z.string(), anchors: z.string() }),
});
export type InstanceConfig = z.infer<typeof InstanceConfigSchema>;
