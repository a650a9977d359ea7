import assert from 'node:assert/strict';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ManifestError, ModelLoadError, ModelRegistry, outputStemNames, parseMdxManifest, UnknownModelError } from '../src/index.ts';
import { SMALL, writeTestModel } from './support/mdx-test-models.ts';
import { OnnxGraphBuilder } from './support/onnx-builder.ts';

const valid = {
  name: 'vocals',
  architecture: 'mdx',
  file: 'vocals.onnx',
  sampleRate: 44100,
  nFft: 4096,
  hopLength: 1024,
  dimF: 1024,
  dimT: 256,
  compensate: 1.0,
  primaryStem: 'vocals',
  secondaryStem: 'backing',
  stems: ['vocals'],
};

describe('parseMdxManifest', () => {
  it('accepts the documented single-stem and multi-stem manifests', () => {
    assert.deepEqual(parseMdxManifest(valid, 'vocals.json'), valid);
    const stems = { ...valid, name: 'stems', file: 'stems.onnx', stems: ['vocals', 'drums', 'bass', 'other'] } as Record<string, unknown>;
    delete stems.secondaryStem;
    const parsed = parseMdxManifest(stems, 'stems.json');
    assert.deepEqual(outputStemNames(parsed), ['vocals', 'drums', 'bass', 'other', 'backing']);
    assert.deepEqual(outputStemNames(parseMdxManifest(valid, 'v.json')), ['vocals', 'backing']);
  });

  it('defaults compensate to 1', () => {
    const { compensate: _, ...rest } = valid;
    assert.equal(parseMdxManifest(rest, 'x.json').compensate, 1);
  });

  const broken: [string, Record<string, unknown>, RegExp][] = [
    ['another architecture', { architecture: 'demucs' }, /unsupported architecture/],
    ['a dimF above nFft/2+1', { dimF: 2050 }, /"dimF"/],
    ['an odd nFft', { nFft: 4095 }, /even/],
    ['a chunk that trimming would empty', { dimT: 4 }, /nothing after trimming/],
    ['a single-stem model without secondaryStem', { secondaryStem: undefined }, /secondaryStem/],
    ['a stem name that is not a safe file name', { primaryStem: '../x', stems: ['../x'] }, /stem name/],
    ['stems not matching primaryStem', { stems: ['drums'] }, /must be \["vocals"\]/],
    ['a non-positive compensate', { compensate: 0 }, /compensate/],
  ];
  for (const [what, patch, message] of broken) {
    it(`rejects ${what} with a ManifestError naming the file`, () => {
      assert.throws(() => parseMdxManifest({ ...valid, ...patch }, 'models/bad.json'), (err: Error) => {
        assert.ok(err instanceof ManifestError);
        assert.match(err.message, /^models\/bad\.json: /);
        assert.match(err.message, message);
        return true;
      });
    });
  }
});

describe('ModelRegistry', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mixdown-registry-test-'));
    await writeTestModel(dir, { ...SMALL, name: 'identity' });
    await writeTestModel(dir, { ...SMALL, name: 'two', stems: [{ name: 'vocals', gain: 1 }, { name: 'drums', gain: 0 }] });
    await writeFile(join(dir, 'broken.json'), '{ "name": "broken", ');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('lists valid manifests and reports invalid ones', async () => {
    const registry = new ModelRegistry({ modelsDir: dir });
    const { manifests, invalid } = await registry.list();
    assert.deepEqual(manifests.map((m) => m.name), ['identity', 'two']);
    assert.equal(invalid.length, 1);
    assert.match(invalid[0].path, /broken\.json$/);
  });

  it('lists nothing for a missing directory', async () => {
    assert.deepEqual(await new ModelRegistry({ modelsDir: join(dir, 'nope') }).list(), { manifests: [], invalid: [] });
  });

  it('creates one session per model and reuses it', async () => {
    const registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1, interOpThreads: 1 });
    const [a, b] = await Promise.all([registry.load('identity'), registry.load('identity')]);
    assert.equal(a, b);
    assert.equal(await registry.load('identity'), a);
    assert.equal(a.inputName, 'input');
    assert.equal(a.outputName, 'output');
    await registry.close();
  });

  it('loads a model again once its session can no longer run', async () => {
    const registry = new ModelRegistry({ modelsDir: dir, intraOpThreads: 1 });
    try {
      const first = await registry.load('identity');
      const spec = new Float32Array(4 * SMALL.dimF * SMALL.dimT).fill(0.5);
      assert.deepEqual((await first.run(spec, 1)).data, spec);
      await first.release(); // as when its inference thread dies
      assert.equal(first.unusable, true);
      await assert.rejects(first.run(spec, 1));
      const second = await registry.load('identity');
      assert.notEqual(second, first);
      assert.equal(second.unusable, false);
      assert.equal(await registry.load('identity'), second);
      assert.deepEqual((await second.run(spec, 1)).data, spec);
    } finally {
      await registry.close();
    }
  });

  it('finds a model by manifest name when the file is named differently', async () => {
    await writeTestModel(dir, { ...SMALL, name: 'renamed' });
    await rename(join(dir, 'renamed.json'), join(dir, 'my-model.json'));
    const registry = new ModelRegistry({ modelsDir: dir });
    assert.equal((await registry.load('renamed')).manifest.name, 'renamed');
    await registry.close();
  });

  it('rejects an unknown model name', async () => {
    await assert.rejects(new ModelRegistry({ modelsDir: dir }).load('nope'), UnknownModelError);
  });

  it('rejects a model whose input shape contradicts its manifest', async () => {
    await writeTestModel(dir, { ...SMALL, name: 'mismatch' });
    const manifest = JSON.parse(await readFile(join(dir, 'mismatch.json'), 'utf8'));
    await writeFile(join(dir, 'mismatch.json'), JSON.stringify({ ...manifest, dimF: 64 }));
    await assert.rejects(new ModelRegistry({ modelsDir: dir }).load('mismatch'), (err: Error) => err instanceof ModelLoadError && /does not match/.test(err.message));
  });

  it('rejects a rank-5 model whose stem count contradicts its manifest', async () => {
    await writeTestModel(dir, { ...SMALL, name: 'three', stems: [{ name: 'a', gain: 1 }, { name: 'b', gain: 1 }, { name: 'c', gain: 1 }] });
    const manifest = JSON.parse(await readFile(join(dir, 'three.json'), 'utf8'));
    await writeFile(join(dir, 'three.json'), JSON.stringify({ ...manifest, stems: ['a', 'b'], primaryStem: 'a' }));
    await assert.rejects(new ModelRegistry({ modelsDir: dir }).load('three'), /3 stems, the manifest lists 2/);
  });

  it('takes the first input and output when they are not called input/output', async () => {
    const g = new OnnxGraphBuilder();
    const x = g.input('mix_spec', ['batch', 4, SMALL.dimF, SMALL.dimT]);
    g.node('Identity', [x], {}, 'stem_spec');
    g.output('stem_spec', ['batch', 4, SMALL.dimF, SMALL.dimT]);
    await writeFile(join(dir, 'named.onnx'), g.encode());
    await writeFile(join(dir, 'named.json'), JSON.stringify({ ...valid, ...SMALL, name: 'named', file: 'named.onnx' }));
    const registry = new ModelRegistry({ modelsDir: dir });
    const model = await registry.load('named');
    assert.deepEqual([model.inputName, model.outputName], ['mix_spec', 'stem_spec']);
    const out = await model.run(new Float32Array(2 * 4 * SMALL.dimF * SMALL.dimT).fill(0.5), 2);
    assert.equal(out.stems, 1);
    assert.equal(out.data[17], 0.5);
    await registry.close();
  });

  it('refuses an execution provider this build does not have, with the provider in the message', async () => {
    await assert.rejects(new ModelRegistry({ modelsDir: dir, executionProvider: 'cuda' }).load('identity'), (err: Error) => err instanceof ModelLoadError && /cuda/i.test(err.message));
  });
});
