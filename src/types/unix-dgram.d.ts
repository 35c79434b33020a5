/** The part of unix-dgram (bnoordhuis/node-unix-dgram) the connector uses: AF_UNIX datagram sockets, which Node's core lacks. */
declare module 'unix-dgram' {
  import type { EventEmitter } from 'node:events';

  export interface UnixDgramSocket extends EventEmitter {
    bind(path: string): void;
    send(buf: Buffer, offset: number, length: number, path: string, callback?: (err?: Error & { code?: unknown }) => void): void;
    close(): void;
  }

  export function createSocket(type: 'unix_dgram', listener?: (msg: Buffer, rinfo: { size: number; path?: string }) => void): UnixDgramSocket;
}
