// The project's local Schema Registry (Apicurio, Confluent-compatible API) answers Confluent's own
// Node.js client as a Confluent registry would: ids for registered schemas, schemas by id,
// BACKWARD compatibility enforced, Avro, Protobuf and JSON Schema accepted; and a stop and start
// keeps its schemas and ids. Subjects are unique per test, so a shared SCHEMA_REGISTRY_URL works.
import { Compatibility, RestError, SchemaRegistryClient } from '@confluentinc/schemaregistry';
import { describe, expect, it } from 'vitest';
import { uniqueName } from '../helpers/unique-name.ts';
import { stoppableSchemaRegistry } from './helpers/schema-registry.ts';

const registry = stoppableSchemaRegistry('schema-registry-service');

function client(): SchemaRegistryClient {
  // No retries: a refused call should fail the test at once, not after backing off.
  return new SchemaRegistryClient({ baseURLs: [registry.url()], maxRetries: 0 });
}

function avroRecord(fields: object[]): string {
  return JSON.stringify({ type: 'record', name: 'Reading', namespace: 'hugot.test', fields });
}

const V1 = avroRecord([{ name: 'text', type: 'string' }]);
// A field with a default: readers of v2 can read v1 data, so BACKWARD accepts it.
const V2 = avroRecord([
  { name: 'text', type: 'string' },
  { name: 'lang', type: 'string', default: 'en' },
]);
// A field without a default: v3 readers cannot read v1/v2 data, so BACKWARD refuses it.
const V3 = avroRecord([
  { name: 'text', type: 'string' },
  { name: 'lang', type: 'string', default: 'en' },
  { name: 'score', type: 'double' },
]);

async function refusal(promise: Promise<unknown>): Promise<RestError> {
  const outcome = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(outcome instanceof RestError)) {
    throw new Error(`expected the registry to refuse, got ${String(outcome)}`);
  }
  return outcome;
}

describe('the local Schema Registry (real Apicurio Registry, Confluent client)', () => {
  it('registers Avro v1 and a compatible v2, refuses an incompatible v3 under BACKWARD, and serves schemas by id', async () => {
    const sr = client();
    const subject = `${uniqueName('readings')}-value`;
    const v1 = await sr.register(subject, { schemaType: 'AVRO', schema: V1 });
    await sr.updateCompatibility(subject, Compatibility.BACKWARD);
    expect(await sr.getCompatibility(subject)).toBe(Compatibility.BACKWARD);

    expect(await sr.testSubjectCompatibility(subject, { schemaType: 'AVRO', schema: V2 })).toBe(
      true,
    );
    const v2 = await sr.register(subject, { schemaType: 'AVRO', schema: V2 });
    expect(v2).not.toBe(v1);

    expect(await sr.testSubjectCompatibility(subject, { schemaType: 'AVRO', schema: V3 })).toBe(
      false,
    );
    const refused = await refusal(sr.register(subject, { schemaType: 'AVRO', schema: V3 }));
    expect(refused.status).toBe(409);
    expect(await sr.getAllVersions(subject)).toEqual([1, 2]);

    // A fresh client: nothing from its cache, each schema comes from the registry.
    const reader = client();
    const byId1 = await reader.getBySubjectAndId(subject, v1);
    const byId2 = await reader.getBySubjectAndId(subject, v2);
    expect(JSON.parse(byId1.schema)).toEqual(JSON.parse(V1));
    expect(JSON.parse(byId2.schema)).toEqual(JSON.parse(V2));
    expect((await reader.getLatestSchemaMetadata(subject)).id).toBe(v2);
  });

  it('registers Protobuf and JSON Schema schemas and serves them back with their type', async () => {
    const sr = client();
    const proto =
      'syntax = "proto3";\npackage hugot.test;\n\nmessage Reading {\n  string text = 1;\n}\n';
    const json = JSON.stringify({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    const protoSubject = `${uniqueName('proto')}-value`;
    const jsonSubject = `${uniqueName('json')}-value`;
    const protoId = await sr.register(protoSubject, { schemaType: 'PROTOBUF', schema: proto });
    const jsonId = await sr.register(jsonSubject, { schemaType: 'JSON', schema: json });
    expect(protoId).not.toBe(jsonId);

    const reader = client();
    const protoBack = await reader.getBySubjectAndId(protoSubject, protoId);
    const jsonBack = await reader.getBySubjectAndId(jsonSubject, jsonId);
    expect(protoBack.schemaType).toBe('PROTOBUF');
    expect(protoBack.schema).toContain('message Reading');
    expect(jsonBack.schemaType).toBe('JSON');
    expect(JSON.parse(jsonBack.schema)).toEqual(JSON.parse(json));
  });

  it.skipIf(!registry.managed)(
    'is down while stopped and comes back on the same URL with its schemas, ids and rules',
    async () => {
      const subject = `${uniqueName('restart')}-value`;
      const id = await client().register(subject, { schemaType: 'AVRO', schema: V1 });
      await client().updateCompatibility(subject, Compatibility.BACKWARD);

      await registry.stop();
      const down = await fetch(`${registry.url()}/subjects`).then(
        () => 'answered',
        () => 'refused',
      );
      expect(down).toBe('refused');

      await registry.start();
      const sr = client();
      expect(JSON.parse((await sr.getBySubjectAndId(subject, id)).schema)).toEqual(JSON.parse(V1));
      expect(await sr.getCompatibility(subject)).toBe(Compatibility.BACKWARD);
      const refused = await refusal(sr.register(subject, { schemaType: 'AVRO', schema: V3 }));
      expect(refused.status).toBe(409);
      // New schemas get new ids after the restart, not ones already handed out.
      const next = await sr.register(subject, { schemaType: 'AVRO', schema: V2 });
      expect(next).toBeGreaterThan(id);
    },
  );
});
