// Minimal typings for the parts of oidc-provider 9 the demo authorization server uses (the package ships none).
// This file is not emitted to dist/: the types any declaration file needs live in ./provider-types.ts, and only the
// implementation (index.ts) imports "oidc-provider", for its values.
declare module "oidc-provider" {
  const Provider: new (issuer: string, configuration: Record<string, unknown>) => import("./provider-types.js").ProviderLike;
  export default Provider;
  export const errors: {
    InvalidTarget: new (description?: string) => Error;
    InvalidScope: new (description: string, scope?: string) => Error;
    InvalidClientAuth: new (description?: string) => Error;
  };
}
