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
  /** Takes several files (chosen or dropped together); `onFiles` gets them all, `onFile` the first. */
  multiple?: boolean;
  onFiles?(files: File[]): void;
  files?: File[];
}) {
  const take = (list: FileList | null | undefined) => {
    const chosen = [...(list ?? [])];
    props.onFiles?.(chosen);
    props.onFile(chosen[0] ?? null);
  };
  const many = (props.files?.length ?? 0) > 1 ? props.files! : null;
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
        const list = e.dataTransfer?.files;
        if (list && list.length > 0) take(props.multiple ? list : ([list[0]] as unknown as FileList));
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
        multiple={props.multiple}
        onChange={(e) => take(e.currentTarget.files)}
      />
      <p class="hint">
        {many
          ? `${many.length} files, ${(many.reduce((sum, f) => sum + f.size, 0) / 1024 / 1024).toFixed(2)} MB: one batch, a job each. `
          : props.file
            ? `${props.file.name}, ${(props.file.size / 1024 / 1024).toFixed(2)} MB. `
            : props.multiple
              ? "Drop a file (or many: a batch) here or choose. "
              : "Drop a file here or choose one. "}
        {help && <span>Accepted: {help}.</span>}
      </p>
    </div>
  );
}
