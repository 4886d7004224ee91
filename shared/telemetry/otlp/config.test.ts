import { describe, expect, test } from "bun:test";
import { ConfigError, DEFAULT_MAX_EXPORT_BATCH_SIZE, DEFAULT_MAX_QUEUE_SIZE, DEFAULT_SCHEDULE_DELAY_MS, exportConfigFrom, type EnvRecord } from "./config.ts";

const BASE: EnvRecord = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };

function configOf(env: EnvRecord) {
  const config = exportConfigFrom(env);
  if (config === undefined) throw new Error("export unexpectedly off");
  return config;
}

function errorOf(env: EnvRecord): ConfigError {
  try {
    exportConfigFrom(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("no ConfigError");
}

describe("exportConfigFrom: on or off", () => {
  test("off without an endpoint, or with empty ones", () => {
    expect(exportConfigFrom({})).toBeUndefined();
    expect(exportConfigFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "  " })).toBeUndefined();
    expect(exportConfigFrom({ OTEL_SERVICE_NAME: "x" })).toBeUndefined();
  });

  test("off when the SDK is disabled or the exporter is none", () => {
    expect(exportConfigFrom({ ...BASE, OTEL_SDK_DISABLED: "true" })).toBeUndefined();
    expect(exportConfigFrom({ ...BASE, OTEL_SDK_DISABLED: "TRUE" })).toBeUndefined();
    expect(exportConfigFrom({ ...BASE, OTEL_SDK_DISABLED: "false" })).toBeDefined();
    expect(exportConfigFrom({ ...BASE, OTEL_TRACES_EXPORTER: "none" })).toBeUndefined();
    expect(exportConfigFrom({ ...BASE, OTEL_TRACES_EXPORTER: "otlp" })).toBeDefined();
    expect(errorOf({ ...BASE, OTEL_TRACES_EXPORTER: "zipkin" }).variable).toBe("OTEL_TRACES_EXPORTER");
  });

  test("a disabled SDK wins over a bad setting", () => {
    expect(exportConfigFrom({ ...BASE, OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toBeUndefined();
  });
});

describe("exportConfigFrom: endpoint", () => {
  test("the base endpoint gets /v1/traces, with or without a trailing slash", () => {
    expect(configOf(BASE).endpoint).toBe("http://collector:4318/v1/traces");
    expect(configOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }).endpoint).toBe("http://collector:4318/v1/traces");
    expect(configOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://c/otlp/" }).endpoint).toBe("https://c/otlp/v1/traces");
  });

  test("the traces endpoint is used as it is and wins", () => {
    expect(configOf({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://other:1234/custom" }).endpoint).toBe("http://other:1234/custom");
  });

  test("a malformed endpoint names its variable", () => {
    expect(errorOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }).variable).toBe("OTEL_EXPORTER_OTLP_ENDPOINT");
    expect(errorOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "ftp://x/" }).variable).toBe("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  });
});

describe("exportConfigFrom: protocol", () => {
  test("protobuf by default, json on request, the traces variable wins", () => {
    expect(configOf(BASE).protocol).toBe("http/protobuf");
    expect(configOf({ ...BASE, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }).protocol).toBe("http/json");
    expect(configOf({ ...BASE, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json" }).protocol).toBe("http/json");
  });

  test("grpc or anything else is a ConfigError naming the variable", () => {
    const grpc = errorOf({ ...BASE, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" });
    expect(grpc).toBeInstanceOf(ConfigError);
    expect(grpc.variable).toBe("OTEL_EXPORTER_OTLP_PROTOCOL");
    expect(grpc.message).toContain("OTEL_EXPORTER_OTLP_PROTOCOL");
    expect(errorOf({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/xml" }).variable).toBe("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
  });
});

describe("exportConfigFrom: headers", () => {
  test("both lists, percent-decoded and trimmed, the traces list wins", () => {
    const config = configOf({
      ...BASE,
      OTEL_EXPORTER_OTLP_HEADERS: " api-key = secret%20one , tenant=a,",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "Tenant=b%2Cc",
    });
    expect(config.headers).toEqual({ "api-key": "secret one", tenant: "b,c" });
  });

  test("a malformed member is an error that does not show the value", () => {
    const error = errorOf({ ...BASE, OTEL_EXPORTER_OTLP_HEADERS: "a=1,secretvalue" });
    expect(error.variable).toBe("OTEL_EXPORTER_OTLP_HEADERS");
    expect(error.message).not.toContain("secretvalue");
    expect(errorOf({ ...BASE, OTEL_EXPORTER_OTLP_TRACES_HEADERS: "a b=1" }).variable).toBe("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
    expect(errorOf({ ...BASE, OTEL_EXPORTER_OTLP_HEADERS: "a=%zz" }).variable).toBe("OTEL_EXPORTER_OTLP_HEADERS");
    expect(errorOf({ ...BASE, OTEL_EXPORTER_OTLP_HEADERS: "a=x%0Ay" }).variable).toBe("OTEL_EXPORTER_OTLP_HEADERS");
  });
});

describe("exportConfigFrom: numbers", () => {
  test("defaults", () => {
    const config = configOf(BASE);
    expect(config.timeoutMs).toBe(10_000);
    expect(config.maxQueueSize).toBe(DEFAULT_MAX_QUEUE_SIZE);
    expect(config.scheduleDelayMs).toBe(DEFAULT_SCHEDULE_DELAY_MS);
    expect(config.maxExportBatchSize).toBe(DEFAULT_MAX_EXPORT_BATCH_SIZE);
  });

  test("timeouts: the traces variable wins", () => {
    expect(configOf({ ...BASE, OTEL_EXPORTER_OTLP_TIMEOUT: "2500" }).timeoutMs).toBe(2500);
    expect(configOf({ ...BASE, OTEL_EXPORTER_OTLP_TIMEOUT: "2500", OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "300" }).timeoutMs).toBe(300);
  });

  test("batch settings, the batch never larger than the queue", () => {
    const config = configOf({ ...BASE, OTEL_BSP_MAX_QUEUE_SIZE: "100", OTEL_BSP_SCHEDULE_DELAY: "50", OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "512" });
    expect([config.maxQueueSize, config.scheduleDelayMs, config.maxExportBatchSize]).toEqual([100, 50, 100]);
  });

  test("not a positive whole number: an error naming the variable", () => {
    for (const [name, value] of [["OTEL_EXPORTER_OTLP_TIMEOUT", "10s"], ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0"], ["OTEL_BSP_MAX_QUEUE_SIZE", "-1"], ["OTEL_BSP_SCHEDULE_DELAY", "1.5"], ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "x"]] as const) {
      expect(errorOf({ ...BASE, [name]: value }).variable).toBe(name);
    }
  });
});

describe("exportConfigFrom: resource", () => {
  test("service.name defaults to cni-plugins", () => {
    expect(configOf(BASE).resource).toEqual({ "service.name": "cni-plugins" });
  });

  test("resource attributes, percent-decoded; OTEL_SERVICE_NAME wins over their service.name", () => {
    expect(configOf({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs,k8s.node.name=node%201, deployment.environment = prod" }).resource).toEqual({
      "service.name": "from-attrs",
      "k8s.node.name": "node 1",
      "deployment.environment": "prod",
    });
    expect(configOf({ ...BASE, OTEL_SERVICE_NAME: "mine", OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs" }).resource).toEqual({ "service.name": "mine" });
  });

  test("a malformed list names its variable", () => {
    expect(errorOf({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: "novalue" }).variable).toBe("OTEL_RESOURCE_ATTRIBUTES");
    expect(errorOf({ ...BASE, OTEL_RESOURCE_ATTRIBUTES: "=v" }).variable).toBe("OTEL_RESOURCE_ATTRIBUTES");
  });
});

describe("exportConfigFrom: sampler", () => {
  test("parentbased_always_on by default", () => {
    expect(configOf(BASE).sampler).toEqual({ name: "parentbased_always_on", ratio: 1 });
  });

  test("every named sampler; ratios from the argument, 1 without one", () => {
    for (const name of ["always_on", "always_off", "parentbased_always_on", "parentbased_always_off"]) {
      expect(configOf({ ...BASE, OTEL_TRACES_SAMPLER: name, OTEL_TRACES_SAMPLER_ARG: "0.5" }).sampler).toEqual({ name, ratio: 1 } as never);
    }
    expect(configOf({ ...BASE, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25" }).sampler).toEqual({ name: "traceidratio", ratio: 0.25 });
    expect(configOf({ ...BASE, OTEL_TRACES_SAMPLER: "parentbased_traceidratio" }).sampler).toEqual({ name: "parentbased_traceidratio", ratio: 1 });
  });

  test("an unknown sampler or a bad ratio is an error naming the variable", () => {
    expect(errorOf({ ...BASE, OTEL_TRACES_SAMPLER: "jaeger_remote" }).variable).toBe("OTEL_TRACES_SAMPLER");
    expect(errorOf({ ...BASE, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" }).variable).toBe("OTEL_TRACES_SAMPLER_ARG");
    expect(errorOf({ ...BASE, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "half" }).variable).toBe("OTEL_TRACES_SAMPLER_ARG");
  });
});
