// Minimal typings for the parts of oidc-provider 9 the demo authorization server uses (the package ships none).
declare module "oidc-provider" {
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
  export interface ProviderLike {
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): void;
    issuer: string;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
    Grant: new (properties: { accountId: string; clientId: string }) => GrantLike;
  }
  const Provider: new (issuer: string, configuration: Record<string, unknown>) => ProviderLike;
  export default Provider;
  export const errors: {
    InvalidTarget: new (description?: string) => Error;
    InvalidScope: new (description: string, scope?: string) => Error;
    InvalidClientAuth: new (description?: string) => Error;
  };
}
