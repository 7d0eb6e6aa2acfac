/**
 * The EMR-writeback agent's task store, handed to its servers before the EMR store is open: every call opens the EMR
 * store on first use (as the agent's handlers do, so a refused caller never touches it) and goes to its `hmcp_tasks`
 * table ({@link EmrStore.tasks}). One object per agent: HMCP keeps one task runtime per store object.
 */
import type { TaskStore } from "hmcp";
import type { EmrStore } from "./store.js";

export function emrTaskStore(store: () => Promise<EmrStore>): TaskStore {
  const tasks = async () => (await store()).tasks();
  return {
    create: async (task, maxActive) => (await tasks()).create(task, maxActive),
    get: async (taskId) => (await tasks()).get(taskId),
    put: async (task) => (await tasks()).put(task),
    renew: async (runner, taskIds, leaseUntil) => (await tasks()).renew(runner, taskIds, leaseUntil),
    sweep: async (now) => (await tasks()).sweep(now),
    list: async (owner, options) => (await tasks()).list(owner, options),
  };
}
