import { useEffect, useState } from "preact/hooks";
import { fieldHelp } from "../api.ts";

/**
 * A file input that also takes a dropped file, stating what the server accepts for the field
 * (read from its OpenAPI document: formats and this deployment's size limit).
 */
export function FileDrop(props: {
  label: string;
  name: string;
  accept: string;
  /** The create route and field whose documented description is shown. */
  docPath: string;
  required?: boolean;
  file: File | null;
  onFile(file: File | null): void;
}) {
  const [help, setHelp] = useState<string | null>(null);
  const [over, setOver] = useState(false);
  useEffect(() => {
    void fieldHelp(props.docPath, props.name).then(setHelp);
  }, [props.docPath, props.name]);
  const id = `file-${props.name}`;
  return (
    <div
      class={`drop${over ? " over" : ""}`}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        const file = e.dataTransfer?.files[0];
        if (file) props.onFile(file);
      }}
    >
      <label for={id}>
        {props.label}
        {props.required ? "" : " (optional)"}
      </label>
      <input
        id={id}
        type="file"
        name={props.name}
        accept={props.accept}
        required={props.required}
        onChange={(e) => props.onFile(e.currentTarget.files?.[0] ?? null)}
      />
      <p class="hint">
        {props.file
          ? `${props.file.name}, ${(props.file.size / 1024 / 1024).toFixed(2)} MB. `
          : "Drop a file here or choose one. "}
        {help && <span>Accepted: {help}.</span>}
      </p>
    </div>
  );
}
