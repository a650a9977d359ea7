import type { JobKind } from "../api.ts";
import { JOB_KINDS, KINDS } from "../kinds/index.ts";

/** The create form of each job kind, with every field the API takes. */
export function NewJobPage({ kind }: { kind: JobKind }) {
  const { Form } = KINDS[kind];
  return (
    <section>
      <h1>New job</h1>
      <nav class="tabs" aria-label="Job kind">
        {JOB_KINDS.map((k) => (
          <a key={k} href={`#/new/${k}`} aria-current={k === kind ? "page" : undefined}>
            {KINDS[k].label}
          </a>
        ))}
      </nav>
      <Form />
    </section>
  );
}
