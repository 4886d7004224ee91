/**
 * The TLS material of `etcd.caFile`, `etcd.certFile` and `etcd.keyFile`, read once per call. A file
 * that cannot be read or holds no PEM block of the right kind is a config error (code 7) naming the
 * field. Bun's fetch reports unusable material only as a socket that could not be opened, so when
 * that happens {@link diagnoseTls} looks closer (node:crypto, loaded only then) and names the field.
 */
import { InvalidConfigError } from "../../../shared/cni/errors.ts";
import { readTextFile } from "../../../shared/sys/file.ts";
import { PathError } from "../../../shared/sys/path-error.ts";
import type { EtcdConfig } from "../config.ts";

export interface TlsMaterial {
  ca?: string;
  cert?: string;
  key?: string;
}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----/;
const PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

function readPem(field: string, path: string, block: RegExp, what: string): string {
  let text: string;
  try {
    text = readTextFile(path);
  } catch (err) {
    throw new InvalidConfigError(`invalid ${field}: ${new PathError("open", path, err).message}`, { cause: err });
  }
  if (!block.test(text)) throw new InvalidConfigError(`invalid ${field} ${path}: no PEM ${what} in it`);
  return text;
}

/** The material of the config's TLS files, or undefined when none is set. */
export function loadTlsMaterial(conf: EtcdConfig): TlsMaterial | undefined {
  if (conf.caFile === undefined && conf.certFile === undefined) return undefined;
  const out: TlsMaterial = {};
  if (conf.caFile !== undefined) out.ca = readPem("etcd.caFile", conf.caFile, CERTIFICATE, "certificate");
  if (conf.certFile !== undefined && conf.keyFile !== undefined) {
    out.cert = readPem("etcd.certFile", conf.certFile, CERTIFICATE, "certificate");
    out.key = readPem("etcd.keyFile", conf.keyFile, PRIVATE_KEY, "private key");
  }
  return out;
}

/**
 * Why Bun could not use the material: the field whose content is broken, or undefined when each
 * piece parses and the key belongs to the certificate.
 */
export function diagnoseTls(conf: EtcdConfig, tls: TlsMaterial): { field: string; why: string } | undefined {
  const crypto = require("node:crypto") as typeof import("node:crypto");
  let cert: import("node:crypto").X509Certificate | undefined;
  const check = (field: string, fn: () => void): { field: string; why: string } | undefined => {
    try {
      fn();
      return undefined;
    } catch (err) {
      return { field, why: (err as Error).message };
    }
  };
  return (
    (tls.ca === undefined ? undefined : check(`etcd.caFile ${conf.caFile}`, () => void new crypto.X509Certificate(tls.ca!))) ??
    (tls.cert === undefined ? undefined : check(`etcd.certFile ${conf.certFile}`, () => void (cert = new crypto.X509Certificate(tls.cert!)))) ??
    (tls.key === undefined ? undefined : check(`etcd.keyFile ${conf.keyFile}`, () => {
      const key = crypto.createPrivateKey(tls.key!);
      if (cert !== undefined && !cert.checkPrivateKey(key)) throw new Error(`the key does not belong to the certificate of etcd.certFile ${conf.certFile}`);
    }))
  );
}
