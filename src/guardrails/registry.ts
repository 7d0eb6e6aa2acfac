/**
 * Guardrail registry: maps the names used in policy files to factories. The built-ins are registered
 * in {@link defaultRegistry}; custom guardrails join with {@link registerGuardrail} (or a private
 * {@link GuardrailRegistry} passed to `loadGuardrailPolicy`) and are configured like the built-ins.
 */
import type { GuardrailFactory } from "./guardrail.js";

const NAME = /^[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)*$/;

/** A name → factory map. */
export class GuardrailRegistry {
  readonly #factories = new Map<string, GuardrailFactory>();

  /** @param parent - consulted for names not registered here (e.g. the default registry's built-ins) */
  constructor(private readonly parent?: GuardrailRegistry) {}

  /**
   * Registers `factory` under `name` (lower-case letters, digits, `-`, `_`, `.`).
   * @throws Error when the name is malformed or already registered in this registry
   */
  register(name: string, factory: GuardrailFactory): this {
    if (!NAME.test(name)) throw new Error(`guardrail name "${name}" is not valid: use lower-case letters, digits, '-', '_' or '.'`);
    if (this.#factories.has(name)) throw new Error(`guardrail "${name}" is already registered`);
    this.#factories.set(name, factory);
    return this;
  }

  /** The factory for `name`, or undefined. */
  get(name: string): GuardrailFactory | undefined {
    return this.#factories.get(name) ?? this.parent?.get(name);
  }

  /** Every registered name (own and parent's), sorted. */
  names(): string[] {
    return [...new Set([...this.#factories.keys(), ...(this.parent?.names() ?? [])])].sort();
  }
}

/** The process-wide registry that holds the built-ins; {@link registerGuardrail} adds to it. */
export const defaultRegistry = new GuardrailRegistry();

/**
 * Registers a custom guardrail in the process-wide registry, so that policy files can name it.
 * @throws Error when `name` is malformed or taken
 */
export function registerGuardrail(name: string, factory: GuardrailFactory): void {
  defaultRegistry.register(name, factory);
}
