// Prints, as shell `export` lines, what modelProcessEnv (src/allocator.ts) adds to this process's
// environment, for the shell launchers (mixdown.sh, docker/entrypoint.sh) to eval before they
// start a process that runs models. Plain node runs it (type stripping; compiled in the image), with no tsx start-up.
import { modelProcessEnv } from "./allocator.ts";

let env: Record<string, string | undefined>;
try {
  env = modelProcessEnv({ ...process.env });
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}
const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
for (const [name, value] of Object.entries(env))
  if (value !== undefined && value !== process.env[name]) console.log(`export ${name}=${quote(value)}`);
