/**
 * The loaded OTLP schema: protobufjs types for the wire, and per-message field plans that drive the
 * JSON validation and the conversions between wire objects and the plain OTLP/JSON shape.
 */
import { Enum, Root, type Type } from 'protobufjs/light.js';
import { OTLP_DESCRIPTOR, OTLP_MESSAGES } from './descriptor.js';

/** How a field's value is represented. */
export type FieldKind =
  | 'string'
  | 'bool'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'double'
  | 'bytes'
  | 'id'
  | 'enum'
  | 'message';

/** One field of a message, pre-computed once from the descriptor. */
export interface FieldPlan {
  /** lowerCamelCase name (OTLP/JSON and protobufjs property name). */
  readonly name: string;
  /** snake_case name, accepted in JSON input as the proto3 JSON mapping allows. */
  readonly snake: string;
  readonly kind: FieldKind;
  readonly repeated: boolean;
  /** The oneof (or synthetic proto3 `optional` oneof) this field belongs to. */
  readonly oneof: string | undefined;
  /** Explicit presence: oneof members, `optional` fields and messages are emitted only when set. */
  readonly presence: boolean;
  /** For ids: the byte length (16 trace, 8 span). */
  readonly idBytes: number;
  /** For ids: whether an empty id is an error. */
  readonly idRequired: boolean;
  /** For enums: value by name (names are accepted in JSON input). */
  readonly enumValues: Readonly<Record<string, number>> | undefined;
  /** For messages: the nested plan (filled after all plans exist, so recursion works). */
  message: MessagePlan | undefined;
  /** Position in the message's field list (a bit in the "seen" mask of a conversion). */
  readonly index: number;
  /** The other members of this field's oneof, if any. */
  oneofSiblings: readonly FieldPlan[] | undefined;
}

/** A message: its fields in descriptor order and its oneofs. */
export interface MessagePlan {
  readonly name: string;
  readonly fields: readonly FieldPlan[];
  /** Oneof name → member fields (for the "only one of" check). */
  readonly oneofs: ReadonlyMap<string, readonly FieldPlan[]>;
  /** The same groups as an array, for the hot loops (empty for most messages). */
  readonly oneofGroups: readonly (readonly FieldPlan[])[];
  /** Field by JSON name, lowerCamelCase and snake_case. */
  readonly byKey: ReadonlyMap<string, FieldPlan>;
  /** The "seen" mask with every field's bit set. */
  readonly allFields: number;
}

/** Id fields: OTLP/JSON writes these bytes fields as hex, not base64. */
const ID_FIELDS: Readonly<Record<string, Readonly<Record<string, { bytes: number; required: boolean }>>>> = {
  // Empty ids are read as empty, not refused: the Collector passes them, and so does the service.
  'opentelemetry.proto.trace.v1.Span': {
    traceId: { bytes: 16, required: false },
    spanId: { bytes: 8, required: false },
    parentSpanId: { bytes: 8, required: false },
  },
  'opentelemetry.proto.trace.v1.Span.Link': {
    traceId: { bytes: 16, required: false },
    spanId: { bytes: 8, required: false },
  },
  'opentelemetry.proto.metrics.v1.Exemplar': {
    traceId: { bytes: 16, required: false },
    spanId: { bytes: 8, required: false },
  },
};

const SCALAR_KINDS: Readonly<Record<string, FieldKind>> = {
  string: 'string',
  bool: 'bool',
  int32: 'int32',
  sint32: 'int32',
  sfixed32: 'int32',
  uint32: 'uint32',
  fixed32: 'uint32',
  int64: 'int64',
  sint64: 'int64',
  sfixed64: 'int64',
  uint64: 'uint64',
  fixed64: 'uint64',
  double: 'double',
  float: 'double',
  bytes: 'bytes',
};

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function fullName(type: Type): string {
  return type.fullName.replace(/^\./, '');
}

function compile(root: Root): Map<string, MessagePlan> {
  const plans = new Map<string, MessagePlan>();
  const pending: { field: FieldPlan; type: Type }[] = [];
  const visit = (type: Type): void => {
    const name = fullName(type);
    if (plans.has(name)) return;
    const ids = ID_FIELDS[name] ?? {};
    const fields: FieldPlan[] = [];
    const oneofs = new Map<string, FieldPlan[]>();
    for (const f of type.fieldsArray) {
      f.resolve();
      const resolved = f.resolvedType;
      const id = ids[f.name];
      let kind: FieldKind;
      if (id) kind = 'id';
      else if (resolved instanceof Enum) kind = 'enum';
      else if (resolved) kind = 'message';
      else {
        const scalar = SCALAR_KINDS[f.type];
        if (!scalar)
          throw new Error(`OTLP descriptor: unsupported field type ${f.type} at ${name}.${f.name}`);
        kind = scalar;
      }
      const oneof = f.partOf?.name;
      const plan: FieldPlan = {
        name: f.name,
        snake: snakeCase(f.name),
        kind,
        repeated: f.repeated,
        oneof,
        presence: !f.repeated && (oneof !== undefined || kind === 'message'),
        idBytes: id?.bytes ?? 0,
        idRequired: id?.required ?? false,
        enumValues: resolved instanceof Enum ? resolved.values : undefined,
        message: undefined,
        index: fields.length,
        oneofSiblings: undefined,
      };
      fields.push(plan);
      if (oneof !== undefined) {
        const members = oneofs.get(oneof) ?? [];
        members.push(plan);
        oneofs.set(oneof, members);
      }
      if (kind === 'message') pending.push({ field: plan, type: resolved as Type });
    }
    // Conversions keep the fields they saw in a 31-bit mask; OTLP messages have at most 16.
    if (fields.length > 31) throw new Error(`OTLP descriptor: ${name} has more than 31 fields`);
    for (const members of oneofs.values()) {
      for (const m of members) m.oneofSiblings = members.filter((x) => x !== m);
    }
    const byKey = new Map<string, FieldPlan>();
    for (const f of fields) {
      byKey.set(f.name, f);
      byKey.set(f.snake, f);
    }
    plans.set(name, {
      name: name.slice(name.lastIndexOf('.') + 1),
      fields,
      oneofs,
      oneofGroups: [...oneofs.values()],
      byKey,
      allFields: fields.length === 31 ? 0x7fffffff : (1 << fields.length) - 1,
    });
  };
  for (const message of Object.values(OTLP_MESSAGES)) visit(root.lookupType(message));
  while (pending.length > 0) {
    const next = pending.pop()!;
    visit(next.type);
    next.field.message = plans.get(fullName(next.type));
  }
  return plans;
}

/** The protobufjs root built from {@link OTLP_DESCRIPTOR}. */
export const otlpRoot: Root = Root.fromJSON(
  OTLP_DESCRIPTOR as unknown as Parameters<typeof Root.fromJSON>[0],
);
otlpRoot.resolveAll();

const plans = compile(otlpRoot);

/** The protobufjs type and the field plan of one top-level message. */
export interface OtlpMessageSchema {
  readonly type: Type;
  readonly plan: MessagePlan;
}

function schemaOf(name: string): OtlpMessageSchema {
  return { type: otlpRoot.lookupType(name), plan: plans.get(name)! };
}

/** The four top-level messages, and the span (decoded on its own by the service's splice path). */
export const SCHEMAS = {
  span: schemaOf('opentelemetry.proto.trace.v1.Span'),
  traceRequest: schemaOf(OTLP_MESSAGES.traceRequest),
  traceResponse: schemaOf(OTLP_MESSAGES.traceResponse),
  metricsRequest: schemaOf(OTLP_MESSAGES.metricsRequest),
  metricsResponse: schemaOf(OTLP_MESSAGES.metricsResponse),
} as const;
