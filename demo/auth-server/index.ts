/**
 * The demo's authorization server: the package's development authorization server (`hmcp/dev-auth`, on
 * `oidc-provider`) with the demo's three clients registered by default.
 */
import { startDevAuthorizationServer, type DevAuthorizationServer, type DevAuthorizationServerOptions } from "hmcp/dev-auth";
import { defaultDemoClients } from "./clients.js";

export { defaultDemoClients, ORCHESTRATOR_WRITE_TYPES } from "./clients.js";
export type { DevClientConfig as DemoClientConfig, DevClient as DemoClient, DevResourceConfig as DemoResourceConfig } from "hmcp/dev-auth";
export type DemoAuthorizationServer = DevAuthorizationServer;
export type DemoAuthorizationServerOptions = Omit<DevAuthorizationServerOptions, "clients"> & Partial<Pick<DevAuthorizationServerOptions, "clients">>;

/**
 * Starts the demo authorization server on 127.0.0.1: {@link startDevAuthorizationServer} with `clients` defaulting to
 * {@link defaultDemoClients}().
 * @throws Error when the port is in use, no resource is given, or a client id repeats
 */
export function startDemoAuthorizationServer(options: DemoAuthorizationServerOptions): Promise<DemoAuthorizationServer> {
  return startDevAuthorizationServer({ ...options, clients: options.clients ?? defaultDemoClients() });
}
