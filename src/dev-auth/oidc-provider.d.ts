// Minimal typings for the parts of oidc-provider 9 the demo authorization server uses (the package ships none).
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  export interface ProviderLike {
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): void;
    issuer: string;
  }
  const Provider: new (issuer: string, configuration: Record<string, unknown>) => ProviderLike;
  export default Provider;
  export const errors: {
    InvalidTarget: new (description?: string) => Error;
    InvalidScope: new (description: string, scope?: string) => Error;
    InvalidClientAuth: new (description?: string) => Error;
  };
}
