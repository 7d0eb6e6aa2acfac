/**
 * The parts of oidc-provider 9's API the development authorization server uses, as local structural types. They live
 * here rather than in the ambient `declare module "oidc-provider"` (oidc-provider.d.ts, which is not emitted) so that
 * the published declaration files never import "oidc-provider": a consumer type-checks `hmcp/dev-auth` with
 * `skipLibCheck: false` whether or not the optional peer is installed (the package ships no types of its own).
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** An interaction session (`provider.interactionDetails`). */
export interface InteractionDetails {
  uid: string;
  prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
  params: Record<string, unknown>;
  session?: { accountId?: string; uid?: string };
  grantId?: string;
}

/** oidc-provider's Grant model: the scopes and claims an account gave a client. */
export interface GrantLike {
  addOIDCScope(scope: string): void;
  rejectOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(resource: string, scope: string): void;
  rejectResourceScope(resource: string, scope: string): void;
  save(): Promise<string>;
}

/** An oidc-provider `Provider` instance, as far as this server uses it. */
export interface ProviderLike {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  on(event: string, listener: (...args: unknown[]) => void): void;
  issuer: string;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
  Grant: new (properties: { accountId: string; clientId: string }) => GrantLike;
}
