import { useEffect, useState } from "preact/hooks";
import { formData, type VoiceModel } from "@mixdown/kits-client";
import { deleteVoiceModel, kits, listVoiceModels, unwrap } from "../api.ts";
import { FileDrop } from "../components/FileDrop.tsx";
import { UrlField } from "../components/form-parts.tsx";
import { Cover, DemoButton } from "../components/VoicePicker.tsx";

/** The public catalogue and the caller's own models (blend results among them), and the import form. */
export function VoicesPage() {
  const [mine, setMine] = useState(false);
  const [models, setModels] = useState<VoiceModel[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    listVoiceModels(mine)
      .then(setModels)
      .catch((err: Error) => setError(err.message));
  }, [mine, tick]);
  const pending = models?.some((m) => m.state === "pending") ?? false;
  const remove = async (model: VoiceModel) => {
    const question = `Delete voice model "${model.title}" (#${model.id}) and its files for good? Ended voice conversions and text-to-speech jobs that used it are deleted with it.`;
    if (!window.confirm(question)) return;
    try {
      await deleteVoiceModel(model.id);
      setError(null);
      setTick((t) => t + 1);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => setTick((t) => t + 1), 2000);
    return () => clearTimeout(timer);
  }, [pending, models]);

  return (
    <section>
      <h1>Voice models</h1>
      <div class="toolbar" role="group" aria-label="Which models">
        <button type="button" aria-pressed={!mine} onClick={() => setMine(false)}>
          Catalogue and mine
        </button>
        <button type="button" aria-pressed={mine} onClick={() => setMine(true)}>
          Only mine
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ul class="model-grid">
        {models?.map((model) => (
          <li class="model" key={model.id}>
            <Cover model={model} size={96} />
            <div>
              <strong>{model.title}</strong>
              <small>
                #{model.id} · {model.public ? "catalogue" : "own"} · {model.architecture} · {model.sampleRate / 1000} kHz
              </small>
              {model.tags.length > 0 && <small>{model.tags.join(", ")}</small>}
              <span class={`status ${model.state}`}>{model.state}</span>
              {model.errorMessage && <p class="error small">{model.errorMessage}</p>}
              <DemoButton model={model} />
              {!model.public && (
                <button
                  type="button"
                  class="small danger"
                  onClick={() => void remove(model)}
                  aria-label={`Delete ${model.title}`}
                >
                  Delete
                </button>
              )}
            </div>
          </li>
        ))}
      </ul>
      <ImportForm onImported={() => setTick((t) => t + 1)} />
    </section>
  );
}

/** Where an import's model comes from: a file, a recording to build from, or a link the worker downloads. */
type ImportSource = "modelFile" | "referenceFile" | "modelUrl";

function ImportForm({ onImported }: { onImported(): void }) {
  const [source, setSource] = useState<ImportSource>("modelFile");
  const [file, setFile] = useState<File | null>(null);
  const [modelUrl, setModelUrl] = useState("");
  const [indexUrl, setIndexUrl] = useState("");
  const [image, setImage] = useState<File | null>(null);
  const [title, setTitle] = useState("");
  const [tags, setTags] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const path = "/api/kits/v1/voice-models";
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setDone(null);
    if (source !== "modelUrl" && !file) return setError("Choose a file to import.");
    const metadata = {
      title,
      tags: tags
        .split(",")
        .map((t) => t.trim())
        .filter(Boolean),
    };
    try {
      // A link is text: the worker downloads the model (and its index) and the model stays pending until then.
      const from = source === "modelUrl" ? { modelUrl, indexUrl: indexUrl || undefined } : { [source]: file ?? undefined };
      const model = await unwrap(
        kits.POST(path, {
          body: { metadata: JSON.stringify(metadata), ...from, image: image ?? undefined },
          bodySerializer: formData,
        }),
      );
      setDone(
        source === "modelUrl"
          ? `Importing “${model.title}” (#${model.id}) from its link: it is ${model.state} until the server has downloaded and checked it.`
          : `Imported “${model.title}” (#${model.id}, ${model.state}).`,
      );
      onImported();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form class="import" onSubmit={submit} aria-label="Import a voice model">
      <h2>Import a voice model</h2>
      <fieldset>
        <legend>From</legend>
        <label>
          <input type="radio" name="source" checked={source === "modelFile"} onChange={() => setSource("modelFile")} /> an ONNX
          model (RVC v2 or Mixdown native)
        </label>
        <label>
          <input type="radio" name="source" checked={source === "referenceFile"} onChange={() => setSource("referenceFile")} /> a
          reference recording of the voice
        </label>
        <label>
          <input type="radio" name="source" checked={source === "modelUrl"} onChange={() => setSource("modelUrl")} /> a link to
          the model (an RVC <code>.pth</code>, <code>.onnx</code> or <code>.zip</code>, as voices are shared)
        </label>
      </fieldset>
      <label>
        Title
        <input name="title" required maxLength={200} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
      </label>
      <label>
        Tags (comma separated)
        <input name="tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
      </label>
      {source === "modelUrl" ? (
        <>
          <UrlField
            label="Model link"
            name="modelUrl"
            required
            placeholder="https://huggingface.co/…/model.pth"
            value={modelUrl}
            onChange={setModelUrl}
          />
          <UrlField
            label={
              <>
                Index link (optional: the model's <code>.index</code>, unless the zip holds it)
              </>
            }
            name="indexUrl"
            placeholder="https://huggingface.co/…/added_IVF256_Flat_nprobe_1.index"
            value={indexUrl}
            onChange={setIndexUrl}
          />
        </>
      ) : (
        <FileDrop
          key={source}
          label={source === "modelFile" ? "ONNX model" : "Reference recording"}
          name={source}
          accept={source === "modelFile" ? ".onnx" : ".wav,.mp3,.flac,audio/*"}
          docPath={path}
          required
          file={file}
          onFile={setFile}
        />
      )}
      <FileDrop
        label="Cover image"
        name="image"
        accept="image/png,image/jpeg,image/webp"
        docPath={path}
        file={image}
        onFile={setImage}
      />
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {done && <p role="status">{done}</p>}
      <button type="submit">Import</button>
    </form>
  );
}
