import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { peerCredentials } from "../../../shared/sys/process.ts";
import { refusePeer, socketFdOf } from "./peer-cred.ts";

/** Accepts one connection from this very process and hands the server side to `fn`. */
async function withAcceptedSocket<T>(fn: (conn: Socket) => T): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "cni-peercred-"));
  const path = join(dir, "s.sock");
  try {
    return await new Promise<T>((resolve, reject) => {
      const server = createServer((conn) => {
        try {
          resolve(fn(conn));
        } catch (err) {
          reject(err);
        } finally {
          conn.destroy();
          client.destroy();
          server.close();
        }
      });
      let client: Socket;
      server.listen(path, () => {
        client = createConnection({ path });
        client.on("error", () => undefined);
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("SO_PEERCRED", () => {
  test("the accepted socket exposes its fd and the caller's credentials (this process)", async () => {
    const cred = await withAcceptedSocket((conn) => {
      const fd = socketFdOf(conn);
      expect(fd).toBeGreaterThan(2);
      return peerCredentials(fd!);
    });
    expect(cred).toEqual({ pid: process.pid, uid: process.getuid!(), gid: process.getgid!() });
  });

  test("own uid and root are accepted, any other uid is refused with the caller's uid and pid", async () => {
    const uid = process.getuid!();
    expect(await withAcceptedSocket((conn) => refusePeer(conn, uid))).toBeUndefined();
    // Pretend the daemon runs as another user: a non-root caller is refused, root never is.
    const asOther = await withAcceptedSocket((conn) => refusePeer(conn, uid + 1));
    if (uid === 0) expect(asOther).toBeUndefined();
    else expect(asOther).toBe(`permission denied: caller uid ${uid} (pid ${process.pid}) is neither root nor the daemon's user (uid ${uid + 1})`);
  });

  test("a socket without a kernel fd is refused (fail closed)", () => {
    expect(refusePeer({} as Socket, 0)).toBe("permission denied: cannot determine the caller's credentials");
  });
});
