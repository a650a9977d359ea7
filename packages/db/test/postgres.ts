// The cluster comes from @mixdown/devstack's starter, imported by path: devstack depends on this
// package (it migrates the stacks it starts), so a package dependency back would be a cycle.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { type RunningPostgres, startPostgres } from "../../devstack/src/postgres.ts";

export interface TestCluster {
  server: RunningPostgres;
  /** A new, empty database on the cluster; returns its URL. */
  freshDatabase(): Promise<string>;
  stop(): Promise<void>;
}

export async function startTestCluster(): Promise<TestCluster> {
  const server = await startPostgres();
  return {
    server,
    async freshDatabase() {
      const name = `t_${randomBytes(6).toString("hex")}`;
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      await client.query(`CREATE DATABASE ${name}`);
      await client.end();
      return server.url.replace(/\/[^/]+$/, `/${name}`);
    },
    stop: () => server.stop(),
  };
}
