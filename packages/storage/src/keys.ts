/**
 * The storage keys of a voice model's files, spelled once: the API (imports), the CLI
 * (`voices import`) and the worker (builds, blends, media) all write and read these.
 */
export const voiceModelKeys = (id: number) => {
  const prefix = `voice-models/${id}`;
  return {
    prefix,
    /** the ONNX the worker runs */
    model: `${prefix}/model.onnx`,
    /** an RVC model's faiss feature index */
    index: `${prefix}/model.index`,
    /** an uploaded RVC `.pth`, kept until the build converts it */
    checkpoint: `${prefix}/model.pth`,
    /** the cover the owner uploaded (`ext`: its format) */
    uploadedCover: (ext: string) => `${prefix}/cover.${ext}`,
    /** the cover and demo clip the worker renders */
    cover: `${prefix}/cover.png`,
    demo: `${prefix}/demo.mp3`,
  };
};
